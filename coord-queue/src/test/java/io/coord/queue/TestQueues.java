package io.coord.queue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;
import org.apache.curator.framework.CuratorFramework;

/** What the queue's tests share: a queue of strings, a serializer of strings that acts on reads, and draining by polls. */
final class TestQueues {
    private TestQueues() {}

    /** A queue of UTF-8 strings at {@code path}, with the default capacity. */
    static DistributedQueue<String> queue(CuratorFramework client, String path) {
        return DistributedQueue.builder(client, path, QueueSerializer.utf8()).build();
    }

    /**
     * UTF-8 strings, each read handed to {@code read}, whose answer is the item: it may throw, answer null, or act on
     * the reading thread or the connection.
     */
    static QueueSerializer<String> utf8Reading(UnaryOperator<String> read) {
        return new QueueSerializer<>() {
            @Override
            public byte[] serialize(String item) {
                return item.getBytes(StandardCharsets.UTF_8);
            }

            @Override
            public String deserialize(byte[] bytes) {
                return read.apply(new String(bytes, StandardCharsets.UTF_8));
            }
        };
    }

    /** Polls until the queue answers empty; the items in the order they came. */
    static List<String> drain(DistributedQueue<String> queue) {
        List<String> items = new ArrayList<>();
        for (String item = queue.poll(); item != null; item = queue.poll()) {
            items.add(item);
        }
        return items;
    }
}
