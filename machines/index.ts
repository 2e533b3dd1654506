export { loopMachine, statusOf, type LoopMachine } from './loop-machine.js';
export { getPendingEffect, type PendingEffect, type LoopSnapshot } from './pending-effect.js';
export * from './types.js';
