/** `loopstate/inspect`: live inspection in the Stately inspector (an optional peer: `npm install @statelyai/inspect ws`). */
export {
  statelyInspector,
  type StatelyInspector,
  type StatelyInspectorOptions,
  type StatelyInspectorStatus,
} from './stately-inspector.js';
