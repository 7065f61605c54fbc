package io.coord.election;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.coord.core.Participant;
import io.coord.testkit.ZooKeeperFixture;
import java.util.List;
import java.util.function.Supplier;

/** An election in which somebody deletes a waiting candidate's node by hand. */
final class DeletedWaiter {
    private DeletedWaiter() {}

    /**
     * Behind a leader, starts the candidate {@code second}, then {@code third}, each once the one before is queued
     * (as {@code participants} lists them), and deletes the second's node by hand. The second's term is the first of
     * its client on the path, so it waits on a watch of the leader's node: nothing tells it.
     */
    static void queueTwoAndDeleteTheSecond(
            ZooKeeperFixture zk, String path, Supplier<List<Participant>> participants, Runnable second, Runnable third)
            throws Exception {
        second.run();
        await().until(() -> participants.get().size() == 2);
        third.run();
        await().until(() -> participants.get().size() == 3);
        Participant deleted = participants.get().get(1);
        assertEquals("second", deleted.id());
        zk.newClient().delete().forPath(path + "/" + deleted.nodeName());
        await().until(() -> participants.get().size() == 2);
    }
}
