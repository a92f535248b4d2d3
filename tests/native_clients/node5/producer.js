'use strict';
/*
 * Drive rocketmq-client-nodejs 1.0.8 (Apache RocketMQ 5's Node SDK, gRPC) for pocketmq's gRPC endpoint tests.
 *
 *   node producer.js --endpoint 127.0.0.1:8081 --topic T normal|fifo|delay|commit|rollback|orphan [--count N]
 *   node producer.js --endpoint 127.0.0.1:8081 --topic A,B,C [--given A] each
 *
 * Output: one JSON object per line on stdout ({"event": ...}); the last one is {"event": "done"}. The SDK's own
 * log lines go to stderr. Every run gives up by itself after --timeout seconds ({"event": "done", "timed_out": true}).
 * One topic per producer: given several, 1.0.8's startup() waits for a Settings answer that came while it fetched
 * their routes, until its Settings sync 5 minutes on (against Apache's proxy too). `each` sends one message to each
 * of the --topic list from a producer given only the --given topics (none by default), as a user works around it.
 */

const { Producer } = require('rocketmq-client-nodejs');
const { emit, logger, run } = require('./driver');

run([ 'endpoint', 'topic', 'scenario' ],
  'usage: producer.js --endpoint host:port --topic T (normal|fifo|delay|commit|rollback|orphan|each)',
  async args => {
    let checked;
    const checkedOnce = new Promise(resolve => { checked = resolve; });
    const checker = {
      async check(view) {
        emit('checked', { message_id: view.messageId, body: view.body.toString() });
        checked();
        return 1; // TransactionResolution.COMMIT
      },
    };
    const topics = args.scenario === 'each' ? (args.given || '').split(',').filter(Boolean) : [ args.topic ];
    const producer = new Producer({ endpoints: args.endpoint, topics, checker, logger });
    await producer.startup();
    const topic = args.topic;
    const sent = receipt => emit('sent', { message_id: receipt.messageId, transaction_id: receipt.transactionId,
      offset: Number(receipt.offset) });
    switch (args.scenario) {
      case 'each':
        for (const each of args.topic.split(',')) {
          const receipt = await producer.send({ topic: each, body: Buffer.from(`to ${each}`) });
          emit('sent', { topic: each, message_id: receipt.messageId });
        }
        break;
      case 'normal':
        sent(await producer.send({ topic, tag: 'TagN', keys: [ 'node-key-1', 'node-key-2' ],
          properties: new Map([[ 'origin', 'node' ], [ 'n', '7' ]]), body: Buffer.from('from node') }));
        break;
      case 'fifo':
        for (let i = 0; i < Number(args.count); i++) {
          sent(await producer.send({ topic, messageGroup: 'node-group', body: Buffer.from(`node step ${i}`) }));
        }
        break;
      case 'delay':
        sent(await producer.send({ topic, deliveryTimestamp: new Date(Number(args.at)), body: Buffer.from('node later') }));
        break;
      case 'commit':
      case 'rollback': {
        const transaction = producer.beginTransaction();
        sent(await producer.send({ topic, body: Buffer.from(`node ${args.scenario}`) }, transaction));
        await (args.scenario === 'commit' ? transaction.commit() : transaction.rollback());
        break;
      }
      case 'orphan': {
        const transaction = producer.beginTransaction();
        sent(await producer.send({ topic, body: Buffer.from('node orphan') }, transaction));
        await checkedOnce; // neither committed nor rolled back: the broker's check-back decides
        break;
      }
      default:
        throw new Error(`unknown scenario ${args.scenario}`);
    }
    await producer.shutdown();
  });
