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

function emit(event, fields) {
  process.stdout.write(JSON.stringify(Object.assign({ event }, fields)) + '\n');
}

function parseArgs(argv) {
  const args = { timeout: '60', count: '1' };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i].startsWith('--')) args[argv[i].slice(2)] = argv[++i];
    else args.scenario = argv[i];
  }
  if (!args.endpoint || !args.topic || !args.group || !args.scenario) {
    throw new Error('usage: consumer.js --endpoint host:port --topic T --group G (simple|redeliver|push)');
  }
  return args;
}

const logger = {
  info: (...a) => console.error('INFO', ...a),
  warn: (...a) => console.error('WARN', ...a),
  error: (...a) => console.error('ERROR', ...a),
  debug: () => {},
};

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

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const timer = setTimeout(() => {
    emit('done', { timed_out: true });
    process.exit(2);
  }, Number(args.timeout) * 1000);
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
  clearTimeout(timer);
  emit('done', {});
  process.exit(0);
}

main().catch(err => {
  emit('error', { message: String(err && err.stack || err) });
  emit('done', { failed: true });
  process.exit(1);
});
