package io.pocketmq.javaclient;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.HashMap;
import java.util.Map;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.MessageExt;

/** The calls whose signatures differ between the 4.9.8 and 5.x clients, by reflection, so one source tree
 * builds against both. */
final class Compat {
    private Compat() {
    }

    /** UPDATE_AND_CREATE_TOPIC on every master of TBW102's route (5.x adds a map of topic attributes). */
    static void createTopic(DefaultMQProducer producer, String topic, int queues) throws Exception {
        try {
            Method m = DefaultMQProducer.class.getMethod("createTopic", String.class, String.class, int.class);
            invoke(m, producer, "TBW102", topic, queues);
        } catch (NoSuchMethodException e) {
            Method m = DefaultMQProducer.class.getMethod(
                "createTopic", String.class, String.class, int.class, Map.class);
            invoke(m, producer, "TBW102", topic, queues, new HashMap<String, String>());
        }
    }

    /** VIEW_MESSAGE_BY_ID: 4.9.8's viewMessage(offsetMsgId); 5.x has only viewMessage(topic, msgId), which
     * tries the id as an offset id first. */
    static MessageExt viewByOffsetId(DefaultMQProducer producer, String topic, String offsetMsgId) throws Exception {
        try {
            Method m = DefaultMQProducer.class.getMethod("viewMessage", String.class);
            return (MessageExt) invoke(m, producer, offsetMsgId);
        } catch (NoSuchMethodException e) {
            return producer.viewMessage(topic, offsetMsgId);
        }
    }

    /** setMessageModel(BROADCASTING): MessageModel moved from common.protocol to remoting.protocol in 5.x. */
    static void broadcasting(DefaultMQPushConsumer consumer) throws Exception {
        for (Method m : DefaultMQPushConsumer.class.getMethods()) {
            if (m.getName().equals("setMessageModel") && m.getParameterCount() == 1) {
                for (Object model : m.getParameterTypes()[0].getEnumConstants()) {
                    if (((Enum<?>) model).name().equals("BROADCASTING")) {
                        invoke(m, consumer, model);
                        return;
                    }
                }
            }
        }
        throw new NoSuchMethodException("DefaultMQPushConsumer.setMessageModel(BROADCASTING)");
    }

    private static Object invoke(Method m, Object target, Object... args) throws Exception {
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            if (e.getCause() instanceof Exception cause) {
                throw cause;
            }
            throw e;
        }
    }
}
