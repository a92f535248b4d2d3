'use strict';
/*
 * What the node5 drivers (producer.js, consumer.js) share: their command line, their output (one JSON object per
 * line on stdout, {"event": ...}, the last one {"event": "done"}), the logger that sends the SDK's own lines to
 * stderr, and a run that gives up by itself after --timeout seconds ({"event": "done", "timed_out": true}).
 */

function emit(event, fields) {
  process.stdout.write(JSON.stringify(Object.assign({ event }, fields)) + '\n');
}

function parseArgs(argv, required, usage) {
  const args = { timeout: '60', count: '1' };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i].startsWith('--')) args[argv[i].slice(2)] = argv[++i];
    else args.scenario = argv[i];
  }
  if (required.some(name => !args[name])) throw new Error(usage);
  return args;
}

const logger = {
  info: (...a) => console.error('INFO', ...a),
  warn: (...a) => console.error('WARN', ...a),
  error: (...a) => console.error('ERROR', ...a),
  debug: () => {}, // (the SDK's Transaction calls it unguarded)
};

// Runs `scenario(args)` with the command line's arguments, under the --timeout, and ends the process.
function run(required, usage, scenario) {
  (async () => {
    const args = parseArgs(process.argv.slice(2), required, usage);
    const timer = setTimeout(() => {
      emit('done', { timed_out: true });
      process.exit(2);
    }, Number(args.timeout) * 1000);
    await scenario(args);
    clearTimeout(timer);
    emit('done', {});
    process.exit(0);
  })().catch(err => {
    emit('error', { message: String(err && err.stack || err) });
    emit('done', { failed: true });
    process.exit(1);
  });
}

module.exports = { emit, logger, run };
