export function webAppIsStale(): boolean;
export function buildWebApp(options?: { force?: boolean }): Promise<boolean>;
