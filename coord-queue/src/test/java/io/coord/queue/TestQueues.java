package io.coord.queue;

import java.util.ArrayList;
import java.util.List;
import org.apache.curator.framework.CuratorFramework;

/** What the queue's tests share: a queue of strings, and draining one by polls. */
final class TestQueues {
    private TestQueues() {}

    /** A queue of UTF-8 strings at {@code path}, with the default capacity. */
    static DistributedQueue<String> queue(CuratorFramework client, String path) {
        return DistributedQueue.builder(client, path, QueueSerializer.utf8()).build();
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
