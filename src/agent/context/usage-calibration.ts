/**
 * The provider's reported usage corrects our counts (I14): when a reply reports the
 * input tokens it was given, the ratio to our own count of that input becomes the
 * model's correction factor, so a provider whose tokenizer counts more than ours still
 * gets inputs within the budget. Kept per model spec, in memory: a restart starts again
 * from our tokenizer's count, which is what the first call of each model uses anyway.
 */
export class UsageCalibration {
  private readonly factors = new Map<string, number>();

  /** Multiply our counts by this for the model (1 until it reported usage). */
  factor(model: string): number {
    return this.factors.get(model) ?? 1;
  }

  observe(model: string, estimatedInputTokens: number, reportedInputTokens: number | undefined): void {
    if (reportedInputTokens === undefined || !Number.isFinite(reportedInputTokens) || reportedInputTokens <= 0 || estimatedInputTokens <= 0) return;
    // Bounded: one odd report (tool schemas, made-up numbers of a local server) must not swing
    // fitting wildly. Never below 1: a provider that reports fewer tokens than we count
    // (cached prompt tokens left out of its figure) must not make us send more than our count allows.
    const ratio = Math.min(2, Math.max(1, reportedInputTokens / estimatedInputTokens));
    const previous = this.factors.get(model);
    this.factors.set(model, previous === undefined ? ratio : Math.max(ratio, previous * 0.7 + ratio * 0.3));
  }
}
