// Drives Apache RocketMQ 5's Go SDK (github.com/apache/rocketmq-clients/golang/v5, gRPC) for pocketmq's tests
// (tests/proxy/test_go_sdk.py), with the SDK's default settings: TLS on, the endpoint as the only address.
//
//	go5client --endpoint 127.0.0.1:8081 [--timeout s] SCENARIO [flags]
//
//	send        --topic T --count N --prefix P                     normal messages with tags, keys and properties
//	fifo        --topic T --count N --groups G --prefix P          message groups P-0 .. P-(G-1), i on group i % G
//	delay       --topic T --prefix P --delay-ms D [--group CG]     one DELAY message; with --group a SimpleConsumer
//	                                                                receives it and says when
//	transaction --topic T --prefix P                                a commit, a rollback and one left to the check
//	simple      --topic T --group CG --expect N [--hold KEY] [--invisible-ms I] [--fifo]
//	                                                                a SimpleConsumer receives and acks N messages;
//	                                                                the message with key KEY is left un-acked once
//	push        --topic T --group CG --expect N [--consumers C] [--fail KEY]
//	                                                                C PushConsumers of one group until N messages
//	                                                                succeeded; with --fail the listener fails the
//	                                                                message with keys KEY every time, and the
//	                                                                consumers run until a line "stop" on stdin
//
// Output: one JSON object per line on stdout ({"event": ...}); the last one is {"event": "done"}. Every scenario
// has a deadline (--timeout seconds), after which the program prints {"event": "done", "timed_out": true} and
// exits with status 2. The SDK writes its log under $rocketmq.client.logRoot (default ~/logs/rocketmq).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
)

var tags = []string{"TagA", "TagB", "TagC"}

var out = struct {
	sync.Mutex
	enc *json.Encoder
}{enc: json.NewEncoder(os.Stdout)}

func emit(event string, fields map[string]any) {
	fields["event"] = event
	out.Lock()
	defer out.Unlock()
	out.enc.SetEscapeHTML(false)
	_ = out.enc.Encode(fields)
}

func fail(format string, args ...any) {
	emit("error", map[string]any{"error": fmt.Sprintf(format, args...)})
	os.Exit(1)
}

func nowMillis() int64 { return time.Now().UnixMilli() }

// bodyFor: some bodies not ASCII, one over 4 KiB (which 4.x clients would compress; this SDK never does).
func bodyFor(prefix string, i int) string {
	switch i % 10 {
	case 3:
		return fmt.Sprintf("%s-%d big ", prefix, i) + strings.Repeat("0123456789abcdef", 320)
	case 7:
		return fmt.Sprintf("%s-%d grüße, 你好, привет, 🚀", prefix, i)
	}
	return fmt.Sprintf("%s-%d", prefix, i)
}

func keysFor(prefix string, i int) []string {
	if i%5 == 0 {
		return []string{fmt.Sprintf("%s-%d", prefix, i), prefix + "-five"}
	}
	return []string{fmt.Sprintf("%s-%d", prefix, i)}
}

func propsFor(i int) map[string]string {
	p := map[string]string{"idx": strconv.Itoa(i)}
	if i%10 == 7 {
		p["city"] = "Zürich"
	}
	return p
}

func newMessage(topic, prefix string, i int) *rmq.Message {
	msg := &rmq.Message{Topic: topic, Body: []byte(bodyFor(prefix, i))}
	msg.SetTag(tags[i%3])
	msg.SetKeys(keysFor(prefix, i)...)
	for k, v := range propsFor(i) {
		msg.AddProperty(k, v)
	}
	return msg
}

// config is the SDK's configuration with nothing but the endpoint (and a consumer's group): no credentials (the SDK
// then signs nothing), TLS on as the SDK defaults.
func config(endpoint, group string) *rmq.Config {
	return &rmq.Config{Endpoint: endpoint, ConsumerGroup: group}
}

func startProducer(endpoint, topic string, opts ...rmq.ProducerOption) rmq.Producer {
	p, err := rmq.NewProducer(config(endpoint, ""), append(opts, rmq.WithTopics(topic))...)
	if err != nil {
		fail("new producer: %v", err)
	}
	if err := p.Start(); err != nil {
		fail("start producer: %v", err)
	}
	return p
}

func sentEvent(msg *rmq.Message, i int, receipt *rmq.SendReceipt) map[string]any {
	e := map[string]any{
		"i": i, "message_id": receipt.MessageID, "transaction_id": receipt.TransactionId, "offset": receipt.Offset,
		"body": string(msg.Body), "keys": msg.GetKeys(), "props": msg.GetProperties(),
	}
	if t := msg.GetTag(); t != nil {
		e["tag"] = *t
	}
	if g := msg.GetMessageGroup(); g != nil {
		e["message_group"] = *g
	}
	return e
}

func sendOne(p rmq.Producer, msg *rmq.Message, i int, extra map[string]any) {
	receipts, err := p.Send(context.Background(), msg)
	if err != nil {
		fail("send %d: %v", i, err)
	}
	e := sentEvent(msg, i, receipts[0])
	for k, v := range extra {
		e[k] = v
	}
	emit("sent", e)
}

// ---- producers --------------------------------------------------------------------------------------------------

func runSend(endpoint, topic, prefix string, count int) {
	p := startProducer(endpoint, topic)
	defer p.GracefulStop()
	for i := 0; i < count; i++ {
		sendOne(p, newMessage(topic, prefix, i), i, nil)
	}
}

func runFifo(endpoint, topic, prefix string, count, groups int) {
	p := startProducer(endpoint, topic)
	defer p.GracefulStop()
	for i := 0; i < count; i++ {
		msg := newMessage(topic, prefix, i)
		msg.SetMessageGroup(fmt.Sprintf("%s-%d", prefix, i%groups))
		sendOne(p, msg, i, nil)
	}
}

func runDelay(endpoint, topic, prefix, group string, delay time.Duration, invisible time.Duration) {
	var sc rmq.SimpleConsumer
	if group != "" { // started first, so the message cannot be missed
		sc = startSimpleConsumer(endpoint, topic, group)
		defer sc.GracefulStop()
	}
	p := startProducer(endpoint, topic)
	msg := newMessage(topic, prefix, 0)
	at := time.Now().Add(delay)
	msg.SetDelayTimestamp(at)
	sendOne(p, msg, 0, map[string]any{"deliver_at": at.UnixMilli(), "sent_at": nowMillis()})
	p.GracefulStop()
	if sc == nil {
		return
	}
	for {
		for _, mv := range receive(sc, invisible) {
			emit("received", received(mv))
			ack(sc, mv)
			return
		}
	}
}

func runTransaction(endpoint, topic, prefix string) {
	var checks sync.WaitGroup
	checks.Add(1)
	var once sync.Once
	checker := &rmq.TransactionChecker{Check: func(mv *rmq.MessageView) rmq.TransactionResolution {
		// The message left open is committed when the broker asks; the others have had their answer already, and
		// are answered the same way should the broker ask about them too.
		decision := mv.GetProperties()["decision"]
		e := received(mv)
		e["decision"] = decision
		emit("checked", e)
		if decision == "rollback" {
			return rmq.ROLLBACK
		}
		if decision == "check" {
			once.Do(checks.Done)
		}
		return rmq.COMMIT
	}}
	p := startProducer(endpoint, topic, rmq.WithTransactionChecker(checker))
	defer p.GracefulStop()
	for i, decision := range []string{"commit", "rollback", "check"} {
		msg := newMessage(topic, prefix, i)
		msg.AddProperty("decision", decision)
		tx := p.BeginTransaction()
		receipts, err := p.SendWithTransaction(context.Background(), msg, tx)
		if err != nil {
			fail("send half %d: %v", i, err)
		}
		e := sentEvent(msg, i, receipts[0])
		e["decision"] = decision
		emit("sent", e)
		switch decision {
		case "commit":
			err = tx.Commit()
		case "rollback":
			err = tx.RollBack()
		}
		if err != nil {
			fail("end transaction %d (%s): %v", i, decision, err)
		}
	}
	checks.Wait()
	// The SDK ends the transaction after the checker returns, which is after it told us: give that call time to
	// leave before GracefulStop closes the producer under it.
	time.Sleep(500 * time.Millisecond)
}

// ---- consumers --------------------------------------------------------------------------------------------------

func received(mv *rmq.MessageView) map[string]any {
	e := map[string]any{
		"message_id": mv.GetMessageId(), "topic": mv.GetTopic(), "body": string(mv.GetBody()),
		"keys": mv.GetKeys(), "props": mv.GetProperties(), "delivery_attempt": mv.GetDeliveryAttempt(),
		"offset": mv.GetOffset(), "receipt_handle": mv.GetReceiptHandle(), "at": nowMillis(),
	}
	if t := mv.GetTag(); t != nil {
		e["tag"] = *t
	}
	if g := mv.GetMessageGroup(); g != nil {
		e["message_group"] = *g
	}
	if d := mv.GetDeliveryTimestamp(); d != nil {
		e["delivery_timestamp"] = d.UnixMilli()
	}
	if b := mv.GetBornTimestamp(); b != nil {
		e["born_timestamp"] = b.UnixMilli()
	}
	if h := mv.GetBornHost(); h != nil {
		e["born_host"] = *h
	}
	return e
}

func firstKey(mv *rmq.MessageView) string {
	if keys := mv.GetKeys(); len(keys) > 0 {
		k := append([]string(nil), keys...)
		sort.Strings(k)
		return strings.Join(k, " ")
	}
	return ""
}

func startSimpleConsumer(endpoint, topic, group string) rmq.SimpleConsumer {
	sc, err := rmq.NewSimpleConsumer(config(endpoint, group),
		rmq.WithSimpleAwaitDuration(5*time.Second),
		rmq.WithSimpleSubscriptionExpressions(map[string]*rmq.FilterExpression{topic: rmq.SUB_ALL}))
	if err != nil {
		fail("new simple consumer: %v", err)
	}
	if err := sc.Start(); err != nil {
		fail("start simple consumer: %v", err)
	}
	return sc
}

// receive is one ReceiveMessage: nothing (MESSAGE_NOT_FOUND after the long poll) is an empty answer.
func receive(sc rmq.SimpleConsumer, invisible time.Duration) []*rmq.MessageView {
	mvs, err := sc.Receive(context.Background(), 16, invisible)
	var status *rmq.ErrRpcStatus
	if errors.As(err, &status) && status.GetCode() == 40401 {
		return nil
	}
	if err != nil {
		fail("receive: %v", err)
	}
	return mvs
}

func ack(sc rmq.SimpleConsumer, mv *rmq.MessageView) {
	if err := sc.Ack(context.Background(), mv); err != nil {
		fail("ack %s: %v", mv.GetMessageId(), err)
	}
	emit("acked", map[string]any{"message_id": mv.GetMessageId(), "receipt_handle": mv.GetReceiptHandle()})
}

// runSimple receives until `expect` messages are acked. The one whose keys are `hold` is left un-acked the first
// time: it must come back after its invisible duration.
func runSimple(endpoint, topic, group string, expect int, hold string, invisible time.Duration) {
	sc := startSimpleConsumer(endpoint, topic, group)
	defer sc.GracefulStop()
	emit("started", map[string]any{})
	acked := map[string]bool{}
	held := false
	for len(acked) < expect {
		for _, mv := range receive(sc, invisible) {
			e := received(mv)
			if hold != "" && firstKey(mv) == hold && !held {
				held = true
				e["held"] = true
				emit("received", e)
				continue
			}
			emit("received", e)
			ack(sc, mv)
			acked[mv.GetMessageId()] = true
		}
	}
}

// runPush starts `consumers` PushConsumers of one group and waits until `expect` messages were consumed with
// SUCCESS; with `failKey` the listener answers FAILURE for the message whose keys are that, every time it comes, and
// the consumers run until "stop" on stdin.
func runPush(endpoint, topic, group string, expect, consumers int, failKey string) {
	var mu sync.Mutex
	succeeded := map[string]bool{}
	done := make(chan struct{})
	var closeOnce sync.Once
	var started []rmq.PushConsumer
	for c := 0; c < consumers; c++ {
		c := c
		listener := &rmq.FuncMessageListener{Consume: func(mv *rmq.MessageView) rmq.ConsumerResult {
			e := received(mv)
			e["consumer"] = c
			failed := failKey != "" && firstKey(mv) == failKey
			e["result"] = map[bool]string{true: "FAILURE", false: "SUCCESS"}[failed]
			emit("consumed", e)
			if failed {
				return rmq.FAILURE
			}
			mu.Lock()
			succeeded[mv.GetMessageId()] = true
			if len(succeeded) >= expect && failKey == "" {
				closeOnce.Do(func() { close(done) })
			}
			mu.Unlock()
			return rmq.SUCCESS
		}}
		pc, err := rmq.NewPushConsumer(config(endpoint, group),
			rmq.WithPushSubscriptionExpressions(map[string]*rmq.FilterExpression{topic: rmq.SUB_ALL}),
			rmq.WithPushMessageListener(listener), rmq.WithPushConsumptionThreadCount(4))
		if err != nil {
			fail("new push consumer: %v", err)
		}
		if err := pc.Start(); err != nil {
			fail("start push consumer %d: %v", c, err)
		}
		started = append(started, pc)
	}
	emit("started", map[string]any{})
	if failKey != "" {
		// A failing message keeps coming back until the DLQ takes it: the test says when it saw it there.
		go func() {
			scanner := bufio.NewScanner(os.Stdin)
			for scanner.Scan() {
				if strings.TrimSpace(scanner.Text()) == "stop" {
					break
				}
			}
			closeOnce.Do(func() { close(done) })
		}()
	}
	<-done
	// Acks are sent after the listener returns: give the last ones time to go before the process ends.
	time.Sleep(500 * time.Millisecond)
	emit("stopping", map[string]any{})
	var wg sync.WaitGroup
	for _, pc := range started {
		wg.Add(1)
		go func(pc rmq.PushConsumer) { defer wg.Done(); _ = pc.GracefulStop() }(pc)
	}
	wg.Wait()
}

func main() {
	global := flag.NewFlagSet("go5client", flag.ExitOnError)
	endpoint := global.String("endpoint", "127.0.0.1:8081", "the gRPC endpoint")
	timeout := global.Float64("timeout", 60, "seconds before the scenario gives up")
	_ = global.Parse(os.Args[1:])
	if global.NArg() < 1 {
		fail("usage: go5client --endpoint host:port SCENARIO [flags]")
	}
	scenario, rest := global.Arg(0), global.Args()[1:]
	fs := flag.NewFlagSet(scenario, flag.ExitOnError)
	topic := fs.String("topic", "", "topic")
	group := fs.String("group", "", "consumer group")
	prefix := fs.String("prefix", "go5", "prefix of bodies and keys")
	count := fs.Int("count", 1, "messages to send")
	groups := fs.Int("groups", 1, "FIFO message groups")
	delayMs := fs.Int("delay-ms", 2000, "delivery delay")
	expect := fs.Int("expect", 1, "messages to consume")
	hold := fs.String("hold", "", "keys of the message left un-acked once")
	invisibleMs := fs.Int("invisible-ms", 10000, "invisible duration of a SimpleConsumer's receive")
	consumers := fs.Int("consumers", 1, "PushConsumers in the group")
	failKey := fs.String("fail", "", "keys of the message the push listener fails")
	_ = fs.Parse(rest)

	go func() {
		time.Sleep(time.Duration(*timeout * float64(time.Second)))
		emit("done", map[string]any{"timed_out": true})
		os.Exit(2)
	}()
	invisible := time.Duration(*invisibleMs) * time.Millisecond
	switch scenario {
	case "send":
		runSend(*endpoint, *topic, *prefix, *count)
	case "fifo":
		runFifo(*endpoint, *topic, *prefix, *count, *groups)
	case "delay":
		runDelay(*endpoint, *topic, *prefix, *group, time.Duration(*delayMs)*time.Millisecond, invisible)
	case "transaction":
		runTransaction(*endpoint, *topic, *prefix)
	case "simple":
		runSimple(*endpoint, *topic, *group, *expect, *hold, invisible)
	case "push":
		runPush(*endpoint, *topic, *group, *expect, *consumers, *failKey)
	default:
		fail("unknown scenario %q", scenario)
	}
	emit("done", map[string]any{})
}
