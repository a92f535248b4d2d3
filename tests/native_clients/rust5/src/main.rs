//! Drives Apache RocketMQ 5's Rust SDK (crates.io `rocketmq`, gRPC) for pocketmq's tests
//! (tests/proxy/test_rust_sdk.py), with the SDK's default settings (TLS off, as the SDK ships).
//!
//!     rust5client --endpoint 127.0.0.1:8081 [--timeout s] SCENARIO [--flag value ...]
//!
//!     send        --topic T --count N --prefix P          normal messages with tags, keys and properties
//!     fifo        --topic T --count N --groups G --prefix P
//!     delay       --topic T --prefix P --delay-s D         one DELAY message (the SDK sends whole seconds)
//!     transaction --topic T --prefix P                      a commit, a rollback and one left to the check
//!     simple      --topic T --group CG --expect N [--hold KEY] [--invisible-ms I]
//!
//! Output: one JSON object per line on stdout; the last one is {"event": "done"}. After --timeout seconds the
//! program prints {"event": "done", "timed_out": true} and exits with status 2. The SDK logs to the terminal
//! (stderr).
use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rocketmq::conf::{ClientOption, ProducerOption, SimpleConsumerOption};
use rocketmq::model::common::{FilterExpression, FilterType};
use rocketmq::model::message::{AckMessageEntry, MessageBuilder, MessageView};
use rocketmq::model::transaction::{Transaction, TransactionResolution};
use rocketmq::{Producer, SimpleConsumer};
use serde_json::{json, Map, Value};

const TAGS: [&str; 3] = ["TagA", "TagB", "TagC"];

fn emit(event: &str, mut fields: Map<String, Value>) {
    fields.insert("event".into(), json!(event));
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", Value::Object(fields));
    let _ = out.flush();
}

fn fail(message: String) -> ! {
    let mut m = Map::new();
    m.insert("error".into(), json!(message));
    emit("error", m);
    std::process::exit(1)
}

fn now_millis() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

fn body_for(prefix: &str, i: usize) -> String {
    match i % 10 {
        3 => format!("{prefix}-{i} big ") + &"0123456789abcdef".repeat(320),
        7 => format!("{prefix}-{i} grüße, 你好, привет, 🚀"),
        _ => format!("{prefix}-{i}"),
    }
}

fn keys_for(prefix: &str, i: usize) -> Vec<String> {
    let mut keys = vec![format!("{prefix}-{i}")];
    if i % 5 == 0 {
        keys.push(format!("{prefix}-five"));
    }
    keys
}

fn props_for(i: usize, extra: &[(&str, &str)]) -> HashMap<String, String> {
    let mut p = HashMap::from([("idx".to_string(), i.to_string())]);
    if i % 10 == 7 {
        p.insert("city".into(), "Zürich".into());
    }
    for (k, v) in extra {
        p.insert(k.to_string(), v.to_string());
    }
    p
}

struct Args {
    endpoint: String,
    timeout: f64,
    scenario: String,
    flags: HashMap<String, String>,
}

impl Args {
    fn parse() -> Args {
        let argv: Vec<String> = std::env::args().skip(1).collect();
        let mut args = Args { endpoint: "127.0.0.1:8081".into(), timeout: 60.0, scenario: String::new(),
                              flags: HashMap::new() };
        let mut i = 0;
        while i < argv.len() {
            let a = &argv[i];
            if let Some(name) = a.strip_prefix("--") {
                let value = argv.get(i + 1).cloned().unwrap_or_else(|| fail(format!("{a} needs a value")));
                match (args.scenario.is_empty(), name) {
                    (true, "endpoint") => args.endpoint = value,
                    (true, "timeout") => args.timeout = value.parse().unwrap_or_else(|_| fail("--timeout".into())),
                    _ => {
                        args.flags.insert(name.to_string(), value);
                    }
                }
                i += 2;
            } else {
                args.scenario = a.clone();
                i += 1;
            }
        }
        args
    }

    fn str(&self, name: &str, default: &str) -> String {
        self.flags.get(name).cloned().unwrap_or_else(|| default.to_string())
    }

    fn num(&self, name: &str, default: usize) -> usize {
        self.flags.get(name).map(|v| v.parse().unwrap_or_else(|_| fail(format!("--{name}")))).unwrap_or(default)
    }
}

fn client_option(endpoint: &str) -> ClientOption {
    let mut option = ClientOption::default();
    option.set_access_url(endpoint);
    option
}

fn sent_event(i: usize, message_id: &str, transaction_id: &str, body: &str, keys: &[String],
              props: &HashMap<String, String>) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("i".into(), json!(i));
    m.insert("message_id".into(), json!(message_id));
    m.insert("transaction_id".into(), json!(transaction_id));
    m.insert("body".into(), json!(body));
    m.insert("tag".into(), json!(TAGS[i % 3]));
    m.insert("keys".into(), json!(keys));
    m.insert("props".into(), json!(props));
    m
}

fn received(mv: &MessageView) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("message_id".into(), json!(mv.message_id()));
    m.insert("topic".into(), json!(mv.topic()));
    m.insert("body".into(), json!(String::from_utf8_lossy(mv.body())));
    m.insert("tag".into(), json!(mv.tag()));
    m.insert("keys".into(), json!(mv.keys()));
    m.insert("props".into(), json!(mv.properties()));
    m.insert("message_group".into(), json!(mv.message_group()));
    m.insert("delivery_attempt".into(), json!(mv.delivery_attempt()));
    m.insert("born_host".into(), json!(mv.born_host()));
    m.insert("at".into(), json!(now_millis()));
    m
}

async fn start_producer(args: &Args, topic: &str) -> Producer {
    let mut option = ProducerOption::default();
    option.set_topics(vec![topic]);
    let mut producer = Producer::new(option, client_option(&args.endpoint))
        .unwrap_or_else(|e| fail(format!("new producer: {e:?}")));
    producer.start().await.unwrap_or_else(|e| fail(format!("start producer: {e:?}")));
    producer
}

async fn run_send(args: &Args, fifo_groups: usize) {
    let (topic, prefix) = (args.str("topic", ""), args.str("prefix", "rs5"));
    let producer = start_producer(args, &topic).await;
    for i in 0..args.num("count", 1) {
        let (body, keys, props) = (body_for(&prefix, i), keys_for(&prefix, i), props_for(i, &[]));
        let mut builder = MessageBuilder::builder()
            .set_topic(topic.clone())
            .set_body(body.clone().into_bytes())
            .set_tag(TAGS[i % 3])
            .set_keys(keys.clone())
            .set_properties(props.clone());
        let group = format!("{prefix}-{}", i % fifo_groups.max(1));
        if fifo_groups > 0 {
            builder = builder.set_message_group(group.clone());
        }
        let message = builder.build().unwrap_or_else(|e| fail(format!("build {i}: {e:?}")));
        let receipt = producer.send(message).await.unwrap_or_else(|e| fail(format!("send {i}: {e:?}")));
        let mut e = sent_event(i, receipt.message_id(), receipt.transaction_id(), &body, &keys, &props);
        if fifo_groups > 0 {
            e.insert("message_group".into(), json!(group));
        }
        emit("sent", e);
    }
    producer.shutdown().await.unwrap_or_else(|e| fail(format!("shutdown: {e:?}")));
}

async fn run_delay(args: &Args) {
    let (topic, prefix) = (args.str("topic", ""), args.str("prefix", "rs5"));
    let producer = start_producer(args, &topic).await;
    let deliver_at = now_millis() / 1000 + args.num("delay-s", 2) as i64;
    let (body, keys, props) = (body_for(&prefix, 0), keys_for(&prefix, 0), props_for(0, &[]));
    let message = MessageBuilder::delay_message_builder(topic.clone(), body.clone().into_bytes(), deliver_at)
        .set_tag(TAGS[0])
        .set_keys(keys.clone())
        .set_properties(props.clone())
        .build()
        .unwrap_or_else(|e| fail(format!("build: {e:?}")));
    let receipt = producer.send(message).await.unwrap_or_else(|e| fail(format!("send: {e:?}")));
    let mut e = sent_event(0, receipt.message_id(), receipt.transaction_id(), &body, &keys, &props);
    e.insert("deliver_at".into(), json!(deliver_at * 1000));
    emit("sent", e);
    producer.shutdown().await.unwrap_or_else(|e| fail(format!("shutdown: {e:?}")));
}

async fn run_transaction(args: &Args) {
    let (topic, prefix) = (args.str("topic", ""), args.str("prefix", "rs5"));
    let checked = Arc::new(AtomicBool::new(false));
    let flag = checked.clone();
    let mut option = ProducerOption::default();
    option.set_topics(vec![topic.clone()]);
    // The open one is committed when the broker asks; the others get the answer their client already gave.
    let checker = Box::new(move |transaction_id: String, mv: MessageView| {
        let decision = mv.properties().get("decision").cloned().unwrap_or_default();
        let mut e = received(&mv);
        e.insert("decision".into(), json!(decision));
        e.insert("transaction_id".into(), json!(transaction_id));
        emit("checked", e);
        if decision == "rollback" {
            return TransactionResolution::ROLLBACK;
        }
        if decision == "check" {
            flag.store(true, Ordering::SeqCst);
        }
        TransactionResolution::COMMIT
    });
    let mut producer = Producer::new_transaction_producer(option, client_option(&args.endpoint), checker)
        .unwrap_or_else(|e| fail(format!("new transaction producer: {e:?}")));
    producer.start().await.unwrap_or_else(|e| fail(format!("start producer: {e:?}")));
    for (i, decision) in ["commit", "rollback", "check"].into_iter().enumerate() {
        let (body, keys) = (body_for(&prefix, i), keys_for(&prefix, i));
        let props = props_for(i, &[("decision", decision)]);
        let message = MessageBuilder::transaction_message_builder(topic.clone(), body.clone().into_bytes())
            .set_tag(TAGS[i % 3])
            .set_keys(keys.clone())
            .set_properties(props.clone())
            .build()
            .unwrap_or_else(|e| fail(format!("build {i}: {e:?}")));
        let tx = producer.send_transaction_message(message).await
            .unwrap_or_else(|e| fail(format!("send half {i}: {e:?}")));
        let mut e = sent_event(i, tx.message_id(), tx.transaction_id(), &body, &keys, &props);
        e.insert("decision".into(), json!(decision));
        emit("sent", e);
        let ended = match decision {
            "commit" => tx.commit().await,
            "rollback" => tx.rollback().await,
            _ => Ok(()),
        };
        ended.unwrap_or_else(|e| fail(format!("end transaction {i} ({decision}): {e:?}")));
    }
    while !checked.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    producer.shutdown().await.unwrap_or_else(|e| fail(format!("shutdown: {e:?}")));
}

/// Receives until `expect` messages are acked; the message whose sorted keys are `hold` is left un-acked the first
/// time, so it comes back after its invisible duration.
async fn run_simple(args: &Args) {
    let (topic, group) = (args.str("topic", ""), args.str("group", ""));
    let (expect, hold) = (args.num("expect", 1), args.str("hold", ""));
    let invisible = Duration::from_millis(args.num("invisible-ms", 10_000) as u64);
    let mut option = SimpleConsumerOption::default();
    option.set_topics(vec![topic.clone()]);
    option.set_consumer_group(group);
    let mut consumer = SimpleConsumer::new(option, client_option(&args.endpoint))
        .unwrap_or_else(|e| fail(format!("new simple consumer: {e:?}")));
    consumer.start().await.unwrap_or_else(|e| fail(format!("start simple consumer: {e:?}")));
    emit("started", Map::new());
    let filter = FilterExpression::new(FilterType::Tag, "*");
    let mut acked = std::collections::HashSet::new();
    let mut held = false;
    while acked.len() < expect {
        let messages = consumer.receive_with(topic.clone(), &filter, 16, invisible).await
            .unwrap_or_else(|e| fail(format!("receive: {e:?}")));
        for mv in messages {
            let mut e = received(&mv);
            // (a message a transaction check hands over has no handle: the SDK's getter unwraps it)
            e.insert("receipt_handle".into(), json!(AckMessageEntry::receipt_handle(&mv)));
            let mut keys = mv.keys().to_vec();
            keys.sort();
            if !hold.is_empty() && keys.join(" ") == hold && !held {
                held = true;
                e.insert("held".into(), json!(true));
                emit("received", e);
                continue;
            }
            emit("received", e);
            consumer.ack(&mv).await.unwrap_or_else(|e| fail(format!("ack {}: {e:?}", mv.message_id())));
            let mut a = Map::new();
            a.insert("message_id".into(), json!(mv.message_id()));
            emit("acked", a);
            acked.insert(mv.message_id().to_string());
        }
    }
    consumer.shutdown().await.unwrap_or_else(|e| fail(format!("shutdown: {e:?}")));
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    let deadline = args.timeout;
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs_f64(deadline));
        let mut m = Map::new();
        m.insert("timed_out".into(), json!(true));
        emit("done", m);
        std::process::exit(2);
    });
    match args.scenario.as_str() {
        "send" => run_send(&args, 0).await,
        "fifo" => run_send(&args, args.num("groups", 1)).await,
        "delay" => run_delay(&args).await,
        "transaction" => run_transaction(&args).await,
        "simple" => run_simple(&args).await,
        other => fail(format!("unknown scenario {other:?}")),
    }
    emit("done", Map::new());
}
