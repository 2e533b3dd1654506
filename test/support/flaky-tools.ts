/**
 * Two read tools for health and ordering tests: `flaky` always throws, `steady` always answers. Their
 * descriptions are what the model is shown, so a test of the offered order reads them as they are.
 */
import { z } from 'zod';
import { defineTool } from 'loopstate';

export const flaky = defineTool({
  name: 'flaky',
  description: 'Fails.',
  input: z.object({}),
  access: 'read',
  execute: () => {
    throw new Error('down');
  },
});

export const steady = defineTool({
  name: 'steady',
  description: 'Works.',
  input: z.object({}),
  access: 'read',
  execute: () => 'ok',
});
