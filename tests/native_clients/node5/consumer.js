'use strict';
/*
 * Drive rocketmq-client-nodejs 1.0.8's consumers (Apache RocketMQ 5's Node SDK, gRPC) for pocketmq's gRPC endpoint
 * tests.
 *
 *   node consumer.js --endpoint 127.0.0.1:8081 --topic T --group G --count N simple|redeliver|push
 *
 * simple: a SimpleConsumer receives N messages and acks each. redeliver: it receives one with a 1 s invisible
 * duration and does not ack it, receives it again (its next attempt), changes its invisible duration, acks it with
 * the new handle. push: a PushConsumer takes N messages, each acked.
 * Output: one JSON object per line on stdout ({"event": ...}); the last one is {"event": "done"}. The SDK's own log
 * lines go to stderr. Every run gives up by itself after --timeout seconds.
 */

const { SimpleConsumer, PushConsumer, ConsumeResult } = require('rocketmq-client-nodejs');
const { emit, logger, run } = require('./driver');

function view(message) {
  return {
    message_id: message.messageId, body: message.body.toString(), tag: message.tag || null, keys: message.keys,
    properties: Object.fromEntries(message.properties), attempt: message.deliveryAttempt,
    corrupted: Boolean(message.corrupted), handle: message.receiptHandle,
  };
}

async function receiveSome(consumer, invisibleMs) {
  for (;;) {
    const messages = await consumer.receive(16, invisibleMs);
    if (messages.length) return messages;
  }
}

run([ 'endpoint', 'topic', 'group', 'scenario' ],
  'usage: consumer.js --endpoint host:port --topic T --group G (simple|redeliver|push)',
  async args => {
    const count = Number(args.count);
    const subscriptions = new Map([[ args.topic, '*' ]]);
    if (args.scenario === 'push') {
      let seen = 0;
      let finished;
      const all = new Promise(resolve => { finished = resolve; });
      const consumer = new PushConsumer({
        endpoints: args.endpoint, consumerGroup: args.group, subscriptions, logger,
        messageListener: {
          consume(message) {
            emit('received', view(message));
            if (++seen >= count) finished();
            return ConsumeResult.SUCCESS;
          },
        },
      });
      await consumer.startup();
      await all;
      await new Promise(resolve => setTimeout(resolve, 300)); // (the last acks)
      await consumer.shutdown();
    } else {
      const consumer = new SimpleConsumer({
        endpoints: args.endpoint, consumerGroup: args.group, subscriptions, awaitDuration: 1000, logger,
      });
      await consumer.startup();
      if (args.scenario === 'simple') {
        let seen = 0;
        while (seen < count) {
          for (const message of await receiveSome(consumer, 10000)) {
            emit('received', view(message));
            await consumer.ack(message);
            emit('acked', { message_id: message.messageId });
            seen++;
          }
        }
      } else if (args.scenario === 'redeliver') {
        const [ first ] = await receiveSome(consumer, 1000); // not acked: back in a second
        emit('received', view(first));
        const [ again ] = await receiveSome(consumer, 10000);
        emit('received', view(again));
        const before = again.receiptHandle;
        await consumer.changeInvisibleDuration(again, 20000);
        emit('changed', { message_id: again.messageId, new_handle: again.receiptHandle !== before });
        await consumer.ack(again);
        emit('acked', { message_id: again.messageId });
      } else {
        throw new Error(`unknown scenario ${args.scenario}`);
      }
      await consumer.shutdown();
    }
  });
