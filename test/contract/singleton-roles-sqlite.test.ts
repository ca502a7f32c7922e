import { InProcessSingletonRoles } from '../../src/app/singleton-role.js';
import { singletonRolesContract } from './singleton-roles.contract.js';

// One process (SQLite): the roles are this process's; `a` and `b` are the same.
singletonRolesContract('in-process', async () => {
  const roles = new InProcessSingletonRoles();
  return { a: roles, b: roles, close: () => roles.close() };
}, { loseHolder: false });
