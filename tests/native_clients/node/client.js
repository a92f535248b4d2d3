'use strict';
/*
 * Drive ali-ons 3.12.0 (RocketMQ's npm client, pure JavaScript) for pocketmq's native tests.
 *
 *   node client.js --namesrv 127.0.0.1:9876 send --topic T --group PG --count 100 --prefix run1
 *   node client.js --namesrv ... push --topic T --group CG --expression "TagA || TagB" --expect 10 [--retry-key K]
 *
 * Output: one JSON object per line on stdout ({"event": ...}); the last one is {"event": "done", ...}. A line
 * "stop" on stdin ends a push consumer early. Every scenario has a deadline (--timeout seconds) after which the
 * script prints {"event": "done", "timed_out": true} and exits by itself. ali-ons does not fall back to TBW102:
 * the topic must exist before it sends. The library's own log lines go to stderr.
 */

const util = require('util');
const { Producer, Consumer, Message } = require('ali-ons');

const TAGS = [ 'TagA', 'TagB' ];

function emit(event, fields) {
  process.stdout.write(JSON.stringify(Object.assign({ event }, fields)) + '\n');
}

// The same bodies as cpp_client.py's body_for.
function bodyFor(prefix, i) {
  if (i % 10 === 3) return `${prefix}-${i} big ` + '0123456789abcdef'.repeat(320); // 5 KiB: sent compressed
  if (i % 10 === 7) return `${prefix}-${i} grüße, 你好, привет, 🚀`;
  return `${prefix}-${i}`;
}

function keysFor(prefix, i) {
  return i % 5 === 0 ? [ `${prefix}-${i}`, `${prefix}-five` ] : [ `${prefix}-${i}` ];
}

function parseArgs(argv) {
  const args = { timeout: 60, scenario: null };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg.startsWith('--')) {
      args[arg.slice(2).replace(/-([a-z])/g, (_, c) => c.toUpperCase())] = argv[++i];
    } else if (!args.scenario) {
      args.scenario = arg;
    } else {
      throw new Error(`unexpected argument: ${arg}`);
    }
  }
  if (!args.namesrv || !args.scenario) {
    throw new Error('usage: client.js --namesrv host:port [--timeout s] (send|push) --topic T ...');
  }
  return args;
}

function commonOptions(args) {
  const toStderr = (...parts) => process.stderr.write(util.format(...parts) + '\n');
  return {
    nameSrv: args.namesrv,
    // Used only to ask Aliyun's address server for name servers, which nameSrv makes unnecessary.
    httpclient: { request: async () => { throw new Error('no address server: nameSrv is set'); } },
    logger: { info() {}, debug() {}, warn: toStderr, error: toStderr },
    // A consumer's offsets go to the broker every second (5 s by default), so a restart sees them soon.
    persistConsumerOffsetInterval: 1000,
  };
}

async function send(args) {
  const producer = new Producer(Object.assign(commonOptions(args), { producerGroup: args.group || 'NodeProducer' }));
  await producer.ready();
  emit('started', { client: 'node', role: 'producer' });
  const count = Number(args.count || 10);
  const prefix = args.prefix || 'node';
  let ok = 0;
  for (let i = 0; i < count; i++) {
    const body = bodyFor(prefix, i);
    const msg = new Message(args.topic, TAGS[i % 2], Buffer.from(body, 'utf8'));
    msg.keys = keysFor(prefix, i);
    msg.properties.idx = String(i);
    if (i % 10 === 7) msg.properties.city = 'Zürich';
    const sent = { i, tags: TAGS[i % 2], keys: keysFor(prefix, i).join(' '), body };
    try {
      const result = await producer.send(msg);
      ok += result.sendStatus === 'SEND_OK' ? 1 : 0;
      emit('sent', Object.assign({ status: result.sendStatus, msg_id: result.msgId, offset: result.queueOffset,
        queue_id: result.messageQueue && Number(result.messageQueue.queueId) }, sent));
    } catch (err) {
      emit('sent', Object.assign({ status: 'ERROR', error: `${err.name}: ${err.message}` }, sent));
    }
  }
  await producer.close();
  emit('done', { timed_out: false, sent: count, ok });
}

function describe(msg) {
  const props = {};
  for (const name of [ 'idx', 'city', 'RETRY_TOPIC', 'ORIGIN_MESSAGE_ID', 'UNIQ_KEY' ]) {
    if (msg.properties && msg.properties[name]) props[name] = msg.properties[name];
  }
  return {
    topic: msg.topic, tags: msg.tags || null, keys: msg.keys || null,
    body: msg.body ? msg.body.toString('utf8') : null, msg_id: msg.msgId, queue_id: msg.queueId,
    queue_offset: Number(msg.queueOffset), reconsume_times: msg.reconsumeTimes, props,
  };
}

async function push(args) {
  const consumer = new Consumer(Object.assign(commonOptions(args), { consumerGroup: args.group }));
  consumer.on('error', err => process.stderr.write(`consumer error: ${err.stack || err}\n`));
  const expect = Number(args.expect || 0);
  const consumed = new Set();
  const retried = new Set();
  let finish;
  const finished = new Promise(resolve => { finish = resolve; });

  consumer.subscribe(args.topic, args.expression || '*', async msg => {
    const seen = describe(msg);
    const key = seen.keys || seen.msg_id;
    if (args.retryKey && seen.keys === args.retryKey && !retried.has(key)) {
      retried.add(key);
      emit('message', Object.assign({ answer: 'RECONSUME_LATER' }, seen));
      return Consumer.ACTION_RETRY;
    }
    consumed.add(key);
    emit('message', Object.assign({ answer: 'CONSUME_SUCCESS' }, seen));
    if (expect && consumed.size >= expect) finish();
  });

  process.stdin.setEncoding('utf8');
  let buffered = '';
  process.stdin.on('data', chunk => {
    buffered += chunk;
    if (buffered.split('\n').some(line => line.trim() === 'stop')) finish();
  });

  await consumer.ready();
  emit('started', { client: 'node', role: 'push', group: args.group, pid: process.pid });
  await finished;
  await new Promise(resolve => setTimeout(resolve, Number(args.linger || 1) * 1000));
  await consumer.close();
  emit('done', { timed_out: false, consumed: consumed.size });
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  setTimeout(() => {
    emit('done', { timed_out: true });
    process.exit(3);
  }, Number(args.timeout) * 1000).unref();
  const scenarios = { send, push };
  if (!scenarios[args.scenario]) throw new Error(`unknown scenario: ${args.scenario}`);
  await scenarios[args.scenario](args);
  // Timers and sockets of the library may keep the loop alive: everything is reported already.
  process.exit(0);
}

main().catch(err => {
  process.stderr.write(`${err.stack || err}\n`);
  emit('done', { timed_out: false, error: String(err) });
  process.exit(2);
});
