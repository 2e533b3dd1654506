/**
 * The refund conversation the durable and distributed-mode fixtures script: a read and a fee in one
 * reply, then a refund (which needs approval), then the answer. Indexed by the replies already given,
 * as a provider answers the same conversation the same way, so a resumed run gets the same reply.
 */
import type { ModelResponse, ModelUsage } from 'loopstate';

export function refundReply(step: number, usage: ModelUsage): ModelResponse {
  switch (step) {
    case 0:
      return {
        text: null,
        toolCalls: [
          { id: 'c1', name: 'lookup', arguments: '{"order_id":"O-7"}' },
          { id: 'c2', name: 'charge_fee', arguments: '{"order_id":"O-7","cents":50}' },
        ],
        usage,
      };
    case 1:
      return { text: null, toolCalls: [{ id: 'c3', name: 'refund', arguments: '{"order_id":"O-7"}' }], usage };
    default:
      return { text: '{"refunded":"O-7"}', toolCalls: [], usage };
  }
}
