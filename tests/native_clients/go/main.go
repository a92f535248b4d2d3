// Drives rocketmq-client-go v2 (Apache RocketMQ's Go client) for pocketmq's native tests
// (tests/native_clients/test_go_client.py).
//
//	goclient --namesrv 127.0.0.1:9876 [--timeout s] send --topic T --group PG --count 100 --prefix run1 \
//	    [--mode sync|async|batch|transaction] [--selector roundrobin|order|hash --order-ids 4]
//	goclient --namesrv ... push --topic T --group CG [--expression "TagA || TagB"] [--expect 10] [--orderly] \
//	    [--retry-key K] [--linger s]
//	goclient --namesrv ... admin --topic T --broker 127.0.0.1:10911 [--queues 8]
//
// Output: one JSON object per line on stdout ({"event": ...}); the last one is {"event": "done", ...}. A line
// "stop" on stdin ends a push consumer early. Every scenario has a deadline (--timeout seconds) after which the
// program prints {"event": "done", "timed_out": true} and exits by itself. The library logs to stderr.
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

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
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

// bodyFor gives the bodies of cpp_client.py and node/client.js: 5 KiB ones (compressed when sent alone), some
// not ASCII.
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

type sendArgs struct {
	topic, group, prefix, mode, selector string
	count, orderIDs                      int
}

// orderSelector puts order id (idx % orders) on the queue of that index among the topic's queues sorted by id,
// as an application's MessageQueueSelector keyed by order id does.
type orderSelector struct{ orders int }

func (s orderSelector) Select(msg *primitive.Message, mqs []*primitive.MessageQueue, _ string) *primitive.MessageQueue {
	sorted := append([]*primitive.MessageQueue(nil), mqs...)
	sort.Slice(sorted, func(a, b int) bool { return sorted[a].QueueId < sorted[b].QueueId })
	idx, _ := strconv.Atoi(msg.GetProperty("idx"))
	return sorted[(idx%s.orders)%len(sorted)]
}

// outcomes answers a transactional send by the message's index: idx % 3 is commit, rollback or unknown; a
// check-back (the broker asks about a half message left unknown) commits, and is reported.
type outcomes struct{ checks chan int }

func (o outcomes) ExecuteLocalTransaction(msg *primitive.Message) primitive.LocalTransactionState {
	idx, _ := strconv.Atoi(msg.GetProperty("idx"))
	return [...]primitive.LocalTransactionState{primitive.CommitMessageState, primitive.RollbackMessageState,
		primitive.UnkonwnState}[idx%3]
}

func (o outcomes) CheckLocalTransaction(msg *primitive.MessageExt) primitive.LocalTransactionState {
	idx, _ := strconv.Atoi(msg.GetProperty("idx"))
	emit("check", map[string]any{"i": idx, "keys": msg.GetKeys(), "topic": msg.Topic, "msg_id": msg.MsgId,
		"transaction_id": msg.TransactionId, "queue_offset": msg.QueueOffset})
	o.checks <- idx
	if idx%3 == 1 {
		return primitive.RollbackMessageState
	}
	return primitive.CommitMessageState
}

func transactions(namesrv string, a sendArgs, opts []producer.Option) error {
	listener := outcomes{checks: make(chan int, 1024)}
	p, err := rocketmq.NewTransactionProducer(listener, opts...)
	if err != nil {
		return err
	}
	if err := p.Start(); err != nil {
		return err
	}
	defer func() { _ = p.Shutdown() }()
	emit("started", map[string]any{"client": "go", "role": "transaction producer"})
	unknown := map[int]bool{}
	for i := 0; i < a.count; i++ {
		msg, fields := message(a, i)
		r, err := p.SendMessageInTransaction(context.Background(), msg)
		if err != nil {
			fields = result(fields, nil, err)
		} else {
			fields = result(fields, r.SendResult, nil)
			fields["local_state"] = [...]string{"", "COMMIT_MESSAGE", "ROLLBACK_MESSAGE", "UNKNOW"}[r.State]
			fields["transaction_id"] = r.TransactionID
		}
		if i%3 == 2 {
			unknown[i] = true
		}
		emit("sent", fields)
	}
	// Stay until the broker has checked back every unknown one.
	for len(unknown) > 0 {
		delete(unknown, <-listener.checks)
	}
	// The client sends a check's answer (one way) after the listener returns, which is after it told us: give the
	// last answer time to leave before Shutdown closes the connection under it.
	time.Sleep(500 * time.Millisecond)
	emit("done", map[string]any{"timed_out": false, "sent": a.count})
	return nil
}

func message(a sendArgs, i int) (*primitive.Message, map[string]any) {
	body := bodyFor(a.prefix, i)
	msg := primitive.NewMessage(a.topic, []byte(body))
	msg.WithTag(tags[i%3])
	msg.WithKeys(keysFor(a.prefix, i))
	msg.WithProperty("idx", strconv.Itoa(i))
	if i%10 == 7 {
		msg.WithProperty("city", "Zürich")
	}
	if a.orderIDs > 0 {
		msg.WithShardingKey("order-" + strconv.Itoa(i%a.orderIDs))
	}
	return msg, map[string]any{"i": i, "tags": tags[i%3], "keys": strings.Join(keysFor(a.prefix, i), " "),
		"body": body}
}

func status(s primitive.SendStatus) string {
	return [...]string{"SEND_OK", "FLUSH_DISK_TIMEOUT", "FLUSH_SLAVE_TIMEOUT", "SLAVE_NOT_AVAILABLE",
		"UNKNOWN_ERROR"}[s]
}

func result(fields map[string]any, r *primitive.SendResult, err error) map[string]any {
	if err != nil {
		fields["status"], fields["error"] = "ERROR", err.Error()
		return fields
	}
	fields["status"], fields["msg_id"], fields["offset_msg_id"] = status(r.Status), r.MsgID, r.OffsetMsgID
	fields["offset"], fields["queue_id"] = r.QueueOffset, r.MessageQueue.QueueId
	fields["broker"] = r.MessageQueue.BrokerName
	return fields
}

func send(namesrv string, args []string) error {
	fs := flag.NewFlagSet("send", flag.ContinueOnError)
	var a sendArgs
	fs.StringVar(&a.topic, "topic", "", "topic")
	fs.StringVar(&a.group, "group", "GoProducer", "producer group")
	fs.StringVar(&a.prefix, "prefix", "go", "body and key prefix")
	fs.StringVar(&a.mode, "mode", "sync", "sync, async, batch or transaction")
	fs.StringVar(&a.selector, "selector", "roundrobin", "roundrobin, order (idx % order-ids) or hash (sharding key)")
	fs.IntVar(&a.count, "count", 10, "messages")
	fs.IntVar(&a.orderIDs, "order-ids", 0, "order ids for the order and hash selectors")
	if err := fs.Parse(args); err != nil {
		return err
	}
	opts := []producer.Option{producer.WithNameServer([]string{namesrv}), producer.WithGroupName(a.group),
		producer.WithRetry(2)}
	switch a.selector {
	case "order":
		opts = append(opts, producer.WithQueueSelector(orderSelector{a.orderIDs}))
	case "hash":
		opts = append(opts, producer.WithQueueSelector(producer.NewHashQueueSelector()))
	case "roundrobin":
	default:
		return fmt.Errorf("unknown selector %q", a.selector)
	}
	if a.mode == "transaction" {
		return transactions(namesrv, a, opts)
	}
	p, err := rocketmq.NewProducer(opts...)
	if err != nil {
		return err
	}
	if err := p.Start(); err != nil {
		return err
	}
	defer func() { _ = p.Shutdown() }()
	emit("started", map[string]any{"client": "go", "role": "producer"})
	ctx := context.Background()
	ok := 0
	switch a.mode {
	case "sync":
		for i := 0; i < a.count; i++ {
			msg, fields := message(a, i)
			r, err := p.SendSync(ctx, msg)
			fields = result(fields, r, err)
			if fields["status"] == "SEND_OK" {
				ok++
			}
			emit("sent", fields)
		}
	case "async":
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i := 0; i < a.count; i++ {
			msg, fields := message(a, i)
			wg.Add(1)
			err := p.SendAsync(ctx, func(_ context.Context, r *primitive.SendResult, err error) {
				defer wg.Done()
				fields = result(fields, r, err)
				fields["callback"] = true
				mu.Lock()
				if fields["status"] == "SEND_OK" {
					ok++
				}
				mu.Unlock()
				emit("sent", fields)
			}, msg)
			if err != nil { // not sent at all: the callback never comes
				wg.Done()
				emit("sent", result(fields, nil, err))
			}
		}
		wg.Wait()
	case "batch":
		msgs := make([]*primitive.Message, 0, a.count)
		sent := make([]map[string]any, 0, a.count)
		for i := 0; i < a.count; i++ {
			msg, fields := message(a, i)
			msgs = append(msgs, msg)
			sent = append(sent, fields)
		}
		r, err := p.SendSync(ctx, msgs...)
		batch := result(map[string]any{"count": a.count}, r, err)
		emit("batch", batch)
		for _, fields := range sent {
			fields["status"] = batch["status"]
			emit("sent", fields)
		}
		if batch["status"] == "SEND_OK" {
			ok = a.count
		}
	default:
		return fmt.Errorf("unknown mode %q", a.mode)
	}
	emit("done", map[string]any{"timed_out": false, "sent": a.count, "ok": ok})
	return nil
}

func describe(m *primitive.MessageExt) map[string]any {
	props := m.GetProperties()
	var keys any
	if k := m.GetKeys(); k != "" {
		keys = k
	}
	var tag any
	if t := m.GetTags(); t != "" {
		tag = t
	}
	return map[string]any{"topic": m.Topic, "tags": tag, "keys": keys, "body": string(m.Body), "msg_id": m.MsgId,
		"offset_msg_id": m.OffsetMsgId, "queue_id": m.Queue.QueueId, "queue_offset": m.QueueOffset,
		"reconsume_times": m.ReconsumeTimes, "props": props, "sys_flag": m.SysFlag, "born_host": m.BornHost,
		"store_host": m.StoreHost}
}

func push(namesrv string, args []string) error {
	fs := flag.NewFlagSet("push", flag.ContinueOnError)
	topic := fs.String("topic", "", "topic")
	group := fs.String("group", "", "consumer group")
	expression := fs.String("expression", "*", "tag expression")
	expect := fs.Int("expect", 0, "finish after consuming this many distinct messages (0: until stop)")
	orderly := fs.Bool("orderly", false, "consume orderly (queues locked at the broker)")
	retryKey := fs.String("retry-key", "", "answer RECONSUME_LATER to the first delivery of the message with these keys")
	linger := fs.Float64("linger", 1, "seconds to stay after the last expected message")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c, err := rocketmq.NewPushConsumer(consumer.WithNameServer([]string{namesrv}), consumer.WithGroupName(*group),
		consumer.WithConsumerOrder(*orderly))
	if err != nil {
		return err
	}
	var mu sync.Mutex
	consumed := map[string]bool{}
	retried := map[string]bool{}
	finished := make(chan struct{})
	var finish sync.Once
	later := consumer.ConsumeRetryLater
	if *orderly {
		later = consumer.SuspendCurrentQueueAMoment
	}
	err = c.Subscribe(*topic, consumer.MessageSelector{Type: consumer.TAG, Expression: *expression},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			answer := consumer.ConsumeSuccess
			for _, m := range msgs {
				key := m.GetKeys()
				if key == "" {
					key = m.MsgId
				}
				if *retryKey != "" && key == *retryKey && !retried[key] {
					retried[key] = true
					answer = later
				}
			}
			name := map[consumer.ConsumeResult]string{consumer.ConsumeSuccess: "CONSUME_SUCCESS",
				consumer.ConsumeRetryLater:          "RECONSUME_LATER",
				consumer.SuspendCurrentQueueAMoment: "SUSPEND_CURRENT_QUEUE_A_MOMENT"}[answer]
			for _, m := range msgs {
				seen := describe(m)
				seen["answer"], seen["batch"] = name, len(msgs)
				emit("message", seen)
				if answer == consumer.ConsumeSuccess {
					key := m.GetKeys()
					if key == "" {
						key = m.MsgId
					}
					consumed[key] = true
				}
			}
			if *expect > 0 && len(consumed) >= *expect {
				finish.Do(func() { close(finished) })
			}
			return answer, nil
		})
	if err != nil {
		return err
	}
	if err := c.Start(); err != nil {
		return err
	}
	go func() {
		scanner := bufio.NewScanner(os.Stdin)
		for scanner.Scan() {
			if strings.TrimSpace(scanner.Text()) == "stop" {
				finish.Do(func() { close(finished) })
			}
		}
	}()
	emit("started", map[string]any{"client": "go", "role": "push", "group": *group, "pid": os.Getpid()})
	<-finished
	time.Sleep(time.Duration(*linger * float64(time.Second)))
	// Shutdown persists the offsets to the broker and unregisters the consumer.
	if err := c.Shutdown(); err != nil {
		return err
	}
	mu.Lock()
	n := len(consumed)
	mu.Unlock()
	emit("done", map[string]any{"timed_out": false, "consumed": n})
	return nil
}

// adminScenario is what an application does with the Go client's admin API: create a topic on a broker, list
// topics, routes, clusters and subscription groups, and delete the topic again.
func adminScenario(namesrv string, args []string) error {
	fs := flag.NewFlagSet("admin", flag.ContinueOnError)
	topic := fs.String("topic", "", "topic to create and delete")
	broker := fs.String("broker", "", "broker address")
	queues := fs.Int("queues", 8, "read and write queues of the new topic")
	if err := fs.Parse(args); err != nil {
		return err
	}
	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{namesrv})))
	if err != nil {
		return err
	}
	defer func() { _ = adm.Close() }()
	ctx := context.Background()
	emit("started", map[string]any{"client": "go", "role": "admin"})
	errText := func(err error) any {
		if err != nil {
			return err.Error()
		}
		return nil
	}
	err = adm.CreateTopic(ctx, admin.WithTopicCreate(*topic), admin.WithBrokerAddrCreate(*broker),
		admin.WithReadQueueNums(*queues), admin.WithWriteQueueNums(*queues))
	emit("created", map[string]any{"topic": *topic, "error": errText(err)})
	list, err := adm.FetchAllTopicList(ctx)
	fields := map[string]any{"error": errText(err)}
	if list != nil {
		fields["topics"] = list.TopicList
	}
	emit("topics", fields)
	mqs, err := adm.FetchPublishMessageQueues(ctx, *topic)
	ids := []int{}
	for _, mq := range mqs {
		ids = append(ids, mq.QueueId)
	}
	emit("queues", map[string]any{"topic": *topic, "queue_ids": ids, "error": errText(err)})
	clusters, err := adm.FetchClusterList(*topic)
	emit("clusters", map[string]any{"clusters": clusters, "error": errText(err)})
	groups, err := adm.GetAllSubscriptionGroup(ctx, *broker, 3*time.Second)
	fields = map[string]any{"error": errText(err)}
	if groups != nil {
		names := []string{}
		for name := range groups.SubscriptionGroupTable {
			names = append(names, name)
		}
		sort.Strings(names)
		fields["groups"] = names
	}
	emit("groups", fields)
	err = adm.DeleteTopic(ctx, admin.WithTopicDelete(*topic), admin.WithBrokerAddrDelete(*broker))
	emit("deleted", map[string]any{"topic": *topic, "error": errText(err)})
	emit("done", map[string]any{"timed_out": false})
	return nil
}

func main() {
	// GOCLIENT_LOG_LEVEL=info (or debug) shows the library's own account on stderr.
	level := os.Getenv("GOCLIENT_LOG_LEVEL")
	if level == "" {
		level = "warn"
	}
	rlog.SetLogLevel(level)
	fs := flag.NewFlagSet("goclient", flag.ExitOnError)
	namesrv := fs.String("namesrv", "", "name server address host:port")
	timeout := fs.Float64("timeout", 60, "seconds before the scenario gives up")
	_ = fs.Parse(os.Args[1:])
	rest := fs.Args()
	if *namesrv == "" || len(rest) == 0 {
		fmt.Fprintln(os.Stderr, "usage: goclient --namesrv host:port [--timeout s] (send|push|admin) [options]")
		os.Exit(2)
	}
	time.AfterFunc(time.Duration(*timeout*float64(time.Second)), func() {
		emit("done", map[string]any{"timed_out": true})
		os.Exit(3)
	})
	var err error
	switch rest[0] {
	case "send":
		err = send(*namesrv, rest[1:])
	case "push":
		err = push(*namesrv, rest[1:])
	case "admin":
		err = adminScenario(*namesrv, rest[1:])
	default:
		err = errors.New("unknown scenario: " + rest[0])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		emit("done", map[string]any{"timed_out": false, "error": err.Error()})
		os.Exit(2)
	}
}
