import { describe, expect, it } from 'vitest';
import { approvalTimeoutFor, isAttended, toolModeFor, toolSettingsOf, toolSettingsSchema } from '../../src/domain/tools/tool-settings.js';

describe('tool settings and approval policy', () => {
  const defaults = toolSettingsOf({});

  it('I16: documented defaults: read-only built-ins allow; memory_write, http_fetch and MCP tools ask when unattended', () => {
    for (const tool of ['memory_search', 'current_time']) {
      expect(toolModeFor(defaults, tool, true)).toBe('allow');
      expect(toolModeFor(defaults, tool, false)).toBe('allow');
    }
    for (const tool of ['memory_write', 'http_fetch', 'mcp__files__delete']) {
      expect(toolModeFor(defaults, tool, true)).toBe('allow');
      expect(toolModeFor(defaults, tool, false)).toBe('ask');
    }
  });

  it('a per-tool rule overrides the default for attended and unattended runs separately', () => {
    const settings = toolSettingsOf({ tools: { approval: { memory_write: { attended: 'ask', unattended: 'deny', timeoutMs: 5_000 } } } });
    expect(toolModeFor(settings, 'memory_write', true)).toBe('ask');
    expect(toolModeFor(settings, 'memory_write', false)).toBe('deny');
    expect(approvalTimeoutFor(settings, 'memory_write', false)).toBe(5_000);
    expect(approvalTimeoutFor(settings, 'http_fetch', false)).toBeLessThan(approvalTimeoutFor(settings, 'http_fetch', true));
  });

  it('a person started runs from the API and chat channels; everything else is unattended', () => {
    expect(isAttended('user')).toBe(true);
    expect(isAttended('channel')).toBe(true);
    for (const trigger of ['autonomy', 'cron', 'webhook', 'heartbeat'] as const) expect(isAttended(trigger)).toBe(false);
  });

  it("existing planner settings keep working: fetch and MCP servers fall back to settings.planner", () => {
    const settings = toolSettingsOf({ planner: { fetch: { allowedHosts: ['example.com'] }, mcpServers: { echo: { transport: 'http', url: 'http://127.0.0.1:1/mcp' } } } });
    expect(settings.fetch.allowedHosts).toEqual(['example.com']);
    expect(Object.keys(settings.mcpServers)).toEqual(['echo']);
    const own = toolSettingsOf({ planner: { fetch: { allowedHosts: ['example.com'] } }, tools: { fetch: { allowedHosts: ['other.org'] } } });
    expect(own.fetch.allowedHosts).toEqual(['other.org']);
  });

  it('I11: an unknown mode or key is refused', () => {
    expect(toolSettingsSchema.safeParse({ approval: { memory_write: { unattended: 'maybe' } } }).success).toBe(false);
    expect(toolSettingsSchema.safeParse({ approvals: {} }).success).toBe(false);
  });
});
