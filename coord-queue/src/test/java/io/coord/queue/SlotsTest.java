package io.coord.queue;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.CoordinationException;
import io.coord.core.internal.ClientContext;
import io.coord.core.internal.Deadline;
import io.coord.core.internal.TransactionOps;
import io.coord.testkit.ZooKeeperFixture;
import io.coord.testkit.ZooKeeperProxy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.curator.framework.api.transaction.CuratorOp;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Write slots: a write's outcome is known whatever happened to its reply, and slots go when the client does. */
@Timeout(60)
class SlotsTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    private static SharedQueue shared(CuratorFramework client, String path) throws Exception {
        SharedQueue shared = SharedQueue.of(ClientContext.of(client), path);
        shared.ensureLayout().get(10, TimeUnit.SECONDS);
        return shared;
    }

    private static List<CuratorOp> oneItem(SharedQueue shared, String item) {
        byte[] stored = ItemCodec.encode(item.getBytes(StandardCharsets.UTF_8));
        return List.of(TransactionOps.create(
                shared.context.client(), shared.layout.itemPrefix(true), CreateMode.PERSISTENT_SEQUENTIAL, stored));
    }

    /** A queue whose client has written once, so that it has its one slot. */
    private static DistributedQueue<String> queueWithItsSlot(CuratorFramework client, String path) {
        DistributedQueue<String> queue =
                DistributedQueue.builder(client, path, QueueSerializer.utf8()).build();
        queue.offer("a");
        assertEquals("a", queue.poll());
        return queue;
    }

    private static int items(CuratorFramework client, String path) throws Exception {
        return client.getChildren().forPath(path + "/items").size();
    }

    @Test
    void aSlotWhoseVersionWrapsToMinusOneIsNotUsedAgainSinceThatVersionMatchesAny() throws Exception {
        String path = ZooKeeperFixture.uniquePath("slot-wrap");
        CuratorFramework client = zk.newClient();
        SharedQueue shared = shared(client, path);
        Slots.Slot slot = shared.slots.borrowFully();
        assertTrue(shared.slots.commit(slot, oneItem(shared, "first"), path).landed());

        // As after 2^32 - 2 writes: the next one moves the version to -1.
        Slots.Slot worn = shared.slots.borrowFully();
        assertEquals(slot.path, worn.path);
        zk.setDataVersion(worn.path, -2);
        worn.version = -2;
        assertTrue(
                shared.slots.commit(worn, oneItem(shared, "at the wrap"), path).landed());

        Slots.Slot next = shared.slots.borrowFully();
        assertNotEquals(worn.path, next.path, "a write at version -1 would land whatever the version");
        assertTrue(shared.slots.commit(next, oneItem(shared, "after"), path).landed());
        await().until(() -> client.checkExists().forPath(worn.path) == null);
        assertEquals(3, items(client, path));
    }

    @Test
    void aMissingSlotAnsweredAfterConnectionNewsCannotTell() throws Exception {
        String path = ZooKeeperFixture.uniquePath("slot-missing");
        CuratorFramework client = zk.newClient();
        SharedQueue shared = shared(client, path);
        Slots.Slot known = goneUnderUs(shared, client);
        CuratorEvent reply =
                shared.slots.send(known, oneItem(shared, "x"), path).get(10, TimeUnit.SECONDS);
        known.sentInEpoch--; // as if the connection had dropped while it was in flight
        assertThrows(Slots.WriteInDoubt.class, () -> shared.slots.outcome(known, reply, path, () -> {}));

        // With no connection news, it was sent once, and found missing: nothing landed.
        Slots.Slot missing = goneUnderUs(shared, client);
        CuratorEvent once =
                shared.slots.send(missing, oneItem(shared, "x"), path).get(10, TimeUnit.SECONDS);
        Slots.Outcome outcome = shared.slots.outcome(missing, once, path, () -> {});
        assertFalse(outcome.landed());
        assertEquals(0, items(client, path));
    }

    /** A new slot, deleted by a hand outside the queue. */
    private static Slots.Slot goneUnderUs(SharedQueue shared, CuratorFramework client) throws Exception {
        Slots.Slot slot = shared.slots.borrowFully();
        client.delete().forPath(slot.path);
        return slot;
    }

    @Test
    void aSlotWhoseCreateEndsInDoubtAfterItsBorrowerGaveUpIsDeletedRatherThanKept() throws Exception {
        String path = ZooKeeperFixture.uniquePath("slot-adopted-in-doubt");
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        CuratorFramework client = zk.newClientWithoutRetries(proxy);
        SharedQueue shared = shared(client, path);
        CuratorFramework reader = zk.newClient();

        // The create lands unseen, its borrower stops waiting, and then its answer is lost for good: kept, the slot
        // might be missing, and a transaction on it that Curator sent twice could not tell whether it landed.
        proxy.loseReplies(true);
        assertThrows(TimeoutException.class, () -> shared.slots.borrow(Deadline.after(Duration.ofMillis(200))));
        await().until(() -> reader.getChildren().forPath(path + "/slots").size() == 1);
        String unseen =
                path + "/slots/" + reader.getChildren().forPath(path + "/slots").get(0);
        proxy.loseReplies(false);
        proxy.cutConnections();

        await().until(() -> reader.checkExists().forPath(unseen) == null);
        Slots.Slot next = shared.slots.borrowFully();
        assertNotEquals(unseen, next.path);
        assertTrue(shared.slots.commit(next, oneItem(shared, "x"), path).landed());
        assertEquals(1, items(client, path));
    }

    @Test
    void aBorrowThatWaitsThroughOutagesSendsACreateInDoubtAgainHoweverOftenItIsLost() throws Exception {
        String path = ZooKeeperFixture.uniquePath("slot-create-lost-often");
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        CuratorFramework client = zk.newClientWithoutRetries(proxy);
        SharedQueue shared = shared(client, path);
        int losses = 5;
        for (int i = 0; i < losses; i++) {
            proxy.breakOnNext(ZooDefs.OpCode.create2);
        }

        Slots.Slot slot = shared.slots.borrowFully();

        assertEquals(losses, proxy.requestsRefused());
        assertTrue(shared.slots.commit(slot, oneItem(shared, "x"), path).landed());
        assertEquals(1, zk.newClient().getChildren().forPath(path + "/slots").size());
    }

    @Test
    void replayOfATransactionThatLandedIsRecognisedAndNotApplied() throws Exception {
        String path = ZooKeeperFixture.uniquePath("slot-replay");
        CuratorFramework client = zk.newClient();
        SharedQueue shared = shared(client, path);
        Slots.Slot slot = shared.slots.borrowFully();
        assertTrue(shared.slots.commit(slot, oneItem(shared, "once"), path).landed());

        // As if the reply had been lost: the same transaction again, from the same slot version.
        Slots.Slot again = shared.slots.borrowFully();
        again.version--;
        Slots.Outcome replay = shared.slots.commit(again, oneItem(shared, "once"), path);

        assertTrue(replay.landed(), "the replay reports the write that landed");
        assertNull(replay.reply(), "learned from the slot, without the results of the operations");
        assertEquals(1, items(client, path));
    }

    @Test
    void aLostReplyOfAWriteThatLandedIsSettledAsLanded() throws Exception {
        String path = ZooKeeperFixture.uniquePath("slot-settle-landed");
        SharedQueue shared = shared(zk.newClient(), path);
        Slots.Slot slot = shared.slots.borrowFully();
        assertTrue(shared.slots.commit(slot, oneItem(shared, "x"), path).landed());
        Slots.Slot sent = shared.slots.borrowFully();
        sent.version--; // the version the lost transaction carried

        assertTrue(shared.slots.settle(sent, path).landed());
        assertEquals(1, shared.slots.borrowFully().version, "the version is known exactly afterwards");
    }

    @Test
    void aLostReplyOfAWriteThatNeverLandedIsSettledAndTheWriteCanNeverLandAfterwards() throws Exception {
        String path = ZooKeeperFixture.uniquePath("slot-settle-lost");
        CuratorFramework client = zk.newClient();
        SharedQueue shared = shared(client, path);
        Slots.Slot slot = shared.slots.borrowFully();
        int carried = slot.version;

        Slots.Outcome settled = shared.slots.settle(slot, path);

        assertFalse(settled.landed());
        assertEquals(-1, settled.failedOp());
        // The transaction in flight, if it ever reaches the server, carries the old version and fails as a whole.
        List<CuratorOp> late = new java.util.ArrayList<>(oneItem(shared, "late"));
        late.add(TransactionOps.setData(client, slot.path, carried, new byte[0]));
        assertThrows(
                KeeperException.BadVersionException.class,
                () -> client.transaction().forOperations(late));
        assertEquals(0, items(client, path));
    }

    @Test
    void aSettlingWriteSentAgainAfterItLandedStillSaysTheWriteNeverLanded() throws Exception {
        String path = ZooKeeperFixture.uniquePath("slot-settle-replay");
        CuratorFramework client = zk.newClient();
        SharedQueue shared = shared(client, path);
        Slots.Slot slot = shared.slots.borrowFully();
        int carried = slot.version;
        assertFalse(shared.slots.settle(slot, path).landed());

        // As if the settling write's reply had been lost too, and the same write sent again at the same version.
        Slots.Slot again = shared.slots.borrowFully();
        again.version--;
        Slots.Outcome replay = shared.slots.settle(again, path);

        assertFalse(replay.landed(), "the settle landed, so the transaction it settled never will");
        assertEquals(-1, replay.failedOp());
        assertEquals(carried + 1, shared.slots.borrowFully().version, "the version is known exactly afterwards");
        assertEquals(0, items(client, path));
    }

    @Test
    void aConsumerWhoseReadsFailKeepsUsingOneSlot() throws Exception {
        String path = ZooKeeperFixture.uniquePath("slot-read-fails");
        CuratorFramework client = zk.newClient();
        DistributedQueue<String> queue = queueWithItsSlot(client, path);
        // An item nobody may read: every poll that reaches it fails on its read, after borrowing a slot.
        CuratorFramework hand = zk.newClient();
        hand.create()
                .withMode(CreateMode.PERSISTENT_SEQUENTIAL)
                .withACL(List.of(new ACL(ZooDefs.Perms.ALL & ~ZooDefs.Perms.READ, new Id("world", "anyone"))))
                .forPath(path + "/items/" + Layout.ITEM_PREFIX, ItemCodec.encode(new byte[1]));

        for (int i = 0; i < 3; i++) {
            assertThrows(CoordinationException.class, queue::poll);
        }

        assertEquals(1, hand.getChildren().forPath(path + "/slots").size(), "the slot went back each time");
        for (String item : hand.getChildren().forPath(path + "/items")) {
            hand.delete().forPath(path + "/items/" + item);
        }
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void aTakeWhoseSlotWriteIsRefusedLeavesTheItemToTheNextPoll() throws Exception {
        String path = ZooKeeperFixture.uniquePath("slot-write-refused");
        CuratorFramework client = zk.newClient();
        DistributedQueue<String> queue = queueWithItsSlot(client, path);
        queue.offer("b");
        CuratorFramework hand = zk.newClient();
        String slot =
                path + "/slots/" + hand.getChildren().forPath(path + "/slots").get(0);
        hand.setACL()
                .withACL(List.of(new ACL(ZooDefs.Perms.ALL & ~ZooDefs.Perms.WRITE, new Id("world", "anyone"))))
                .forPath(slot);

        // The take's transaction fails as a whole on the slot's own write: nothing was taken.
        assertThrows(CoordinationException.class, queue::poll);

        hand.setACL()
                .withACL(List.of(new ACL(ZooDefs.Perms.ALL, new Id("world", "anyone"))))
                .forPath(slot);
        assertEquals("b", queue.poll());
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void aSlotWhoseCreateIsUnansweredIsDeletedWhenTheClientCloses() throws Exception {
        String path = ZooKeeperFixture.uniquePath("slot-create-unanswered");
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        CuratorFramework client = zk.newCustomClient(builder -> builder.connectString(proxy.connectString()));
        SharedQueue shared = shared(client, path);
        CuratorFramework reader = zk.newClient();

        // The create reaches the server and lands; its answer never comes back.
        proxy.loseReplies(true);
        assertThrows(TimeoutException.class, () -> shared.slots.borrow(Deadline.after(Duration.ofMillis(200))));
        await().until(() -> reader.getChildren().forPath(path + "/slots").size() == 1);
        client.close();

        await().until(() -> reader.getChildren().forPath(path + "/slots").isEmpty());
    }

    @Test
    void slotsAreDeletedWhenTheClientCloses() throws Exception {
        String path = ZooKeeperFixture.uniquePath("slot-close");
        CuratorFramework client = zk.newClient();
        DistributedQueue<String> queue = queueWithItsSlot(client, path);
        CuratorFramework reader = zk.newClient();
        assertEquals(1, reader.getChildren().forPath(path + "/slots").size(), "one thread wrote: one slot");

        client.close();

        await().until(() -> reader.getChildren().forPath(path + "/slots").isEmpty());
    }
}
