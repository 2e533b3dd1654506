/**
 * loopstate's version, as its package.json says (a test keeps the two equal): the OpenTelemetry tracer's
 * version, with no file read, so the core needs no file system.
 * @example
 * console.log(`loopstate ${LOOPSTATE_VERSION}`);
 */
export const LOOPSTATE_VERSION = '0.1.0';
