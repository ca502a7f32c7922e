import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { contextSettingsSchema } from '../../domain/context/context-settings.js';
import type { HttpDependencies } from '../http-dependencies.js';
import { agentParams, errorBody } from '../schemas.js';

/** The setting key an agent's context policy lives under (agents.settings.context). */
const CONTEXT_SETTINGS_KEY = 'context';

/** An agent's context policy (I14): its budget, the answer's room, when to fold, the summary model. Owner-only (I12). */
export function contextRoutes(deps: Pick<HttpDependencies, 'agents'>): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      '/api/agents/:agentId/context',
      { schema: { tags: ['agents'], description: "The agent's context settings (unset fields come from VIGIL_CONTEXT_TOKENS, the model's window, or the defaults).", params: agentParams, response: { 200: contextSettingsSchema, 404: errorBody } } },
      async (request) => {
        const agent = await deps.agents.get(request.userId, request.params.agentId);
        const parsed = contextSettingsSchema.safeParse(agent.settings[CONTEXT_SETTINGS_KEY] ?? {});
        return parsed.success ? parsed.data : contextSettingsSchema.parse({});
      },
    );

    app.put(
      '/api/agents/:agentId/context',
      {
        schema: {
          tags: ['agents'],
          description: "Replace the agent's context settings; omitted fields take their defaults.",
          params: agentParams,
          body: contextSettingsSchema,
          response: { 200: contextSettingsSchema, 400: errorBody, 404: errorBody },
        },
      },
      async (request) => {
        await deps.agents.updateSetting(request.userId, request.params.agentId, CONTEXT_SETTINGS_KEY, request.body);
        return request.body;
      },
    );
  };
}
