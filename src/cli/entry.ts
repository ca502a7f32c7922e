// The process entry of `vigil` (bin/vigil.js and `npm start` run the compiled copy).
import { runCli } from './main.js';

void runCli(process.argv.slice(2));
