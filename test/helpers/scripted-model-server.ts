import { ScriptedOpenAiServer } from './openai-server.js';
import { scriptedModelOptions, startTestServer, type Backend, type TestServer } from './test-server.js';

/** A test server whose model is a scripted OpenAI-compatible server on loopback. */
export interface ScriptedModelServer {
  model: ScriptedOpenAiServer;
  server: TestServer;
}

/**
 * The scripted model server, then a real server whose agents call it (`openai:scripted`,
 * no retries of a failed call). A suite keeps both, and passes them, as they are then
 * (after a restart, its new server), to stopScriptedModelServer.
 */
export async function startScriptedModelServer(backend: Backend): Promise<ScriptedModelServer> {
  const model = await ScriptedOpenAiServer.start();
  try {
    return { model, server: await startTestServer(backend, scriptedModelOptions(model)) };
  } catch (error) {
    await model.close();
    throw error;
  }
}

/** The server first (its runs end while the model still answers), then the model server; either may be missing when a start failed. */
export async function stopScriptedModelServer(started: Partial<ScriptedModelServer>): Promise<void> {
  try {
    await started.server?.destroy();
  } finally {
    await started.model?.close();
  }
}
