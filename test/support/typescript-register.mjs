// `node --import ./test/support/typescript-register.mjs file.ts` runs a TypeScript file of this repo.
import { register } from 'node:module';

register('./typescript-hooks.mjs', import.meta.url);
