/**
 * The one way tests wait: poll a condition until it holds (never a fixed sleep). The
 * deadline only turns a hang into a clear failure; it is not a timing assertion.
 */
export async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 10_000, what = 'a condition'): Promise<void> {
  const start = Date.now();
  while (!(await condition())) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
