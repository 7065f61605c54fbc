package io.coord.queue;

import static io.coord.queue.TestQueues.queue;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.CoordinationException;
import io.coord.testkit.Background;
import io.coord.testkit.ZooKeeperFixture;
import io.coord.testkit.ZooKeeperFixture.Session;
import io.coord.testkit.ZooKeeperProxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** A claim belongs to the session that made it: a reconnection keeps it, and an expired one never touches a newer. */
@Timeout(60)
class ClaimSessionTest {
    private static final Duration WAIT = Duration.ofSeconds(10);

    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    private static long sessionOf(CuratorFramework client) throws Exception {
        return client.getZookeeperClient().getZooKeeper().getSessionId();
    }

    /** Expires the client's session and waits until it is connected on a new one. */
    private static void expireAndReconnect(CuratorFramework client) throws Exception {
        long session = sessionOf(client);
        zk.expireSession(client);
        await().atMost(Duration.ofSeconds(20))
                .until(() -> client.getZookeeperClient().isConnected() && sessionOf(client) != session);
    }

    @Test
    void claimSurvivesASameSessionReconnect() throws Exception {
        String path = ZooKeeperFixture.uniquePath("same-session");
        CuratorFramework client = zk.newOutageProofClient();
        DistributedQueue<String> queue = queue(client, path);
        queue.offer("x");
        Claim<String> claim = queue.claim(WAIT).orElseThrow();
        long session = sessionOf(client);
        CountDownLatch reconnected = ZooKeeperFixture.latchOn(client, ConnectionState.RECONNECTED);

        client.getZookeeperClient().getZooKeeper().getTestable().closeSocket();
        assertTrue(reconnected.await(20, TimeUnit.SECONDS));
        assertEquals(session, sessionOf(client), "the test needs the same session");

        assertNull(queue.poll(), "the claimed item stays hidden from its own client");
        assertNull(queue(zk.newClient(), path).poll(), "and from every other");
        assertTrue(claim.ack(), "the claim is still ours");
        assertNull(queue.poll());
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void closingAClaimOfAnExpiredSessionLeavesTheNewerClaimAlone() throws Exception {
        String path = ZooKeeperFixture.uniquePath("expired-close");
        CuratorFramework client = zk.newClient();
        DistributedQueue<String> queue = queue(client, path);
        Claims claims = claimAgainAfterExpiry(client, queue);
        Claim<String> old = claims.old();

        old.close();

        assertFalse(old.ack(), "the old claim died with its session");
        assertNewerClaimStillHolds(queue, claims.newer(), path);
    }

    @Test
    void ackingAClaimOfAnExpiredSessionLeavesTheNewerClaimAlone() throws Exception {
        String path = ZooKeeperFixture.uniquePath("expired-ack");
        CuratorFramework client = zk.newClient();
        DistributedQueue<String> queue = queue(client, path);
        Claims claims = claimAgainAfterExpiry(client, queue);
        Claim<String> old = claims.old();

        assertFalse(old.ack(), "the old claim died with its session");
        old.close();

        assertNewerClaimStillHolds(queue, claims.newer(), path);
    }

    @Test
    void aClaimWhoseSessionMarkerWasDeletedByHandIsStillAcked() throws Exception {
        String path = ZooKeeperFixture.uniquePath("marker-deleted-ack");
        DistributedQueue<String> queue = queue(zk.newClient(), path);
        queue.offer("x");
        Claim<String> claim = queue.claim(WAIT).orElseThrow();

        deleteSessionMarkers(path);

        assertTrue(claim.ack(), "the session lives, and the claim with it");
        assertNull(queue(zk.newClient(), path).poll(), "the item is gone");
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void aClaimWhoseSessionMarkerWasDeletedByHandIsStillReleased() throws Exception {
        String path = ZooKeeperFixture.uniquePath("marker-deleted-close");
        DistributedQueue<String> queue = queue(zk.newClient(), path);
        queue.offer("x");
        Claim<String> claim = queue.claim(WAIT).orElseThrow();

        deleteSessionMarkers(path);
        claim.close();

        assertEquals("x", queue(zk.newClient(), path).poll(WAIT), "the item is back for every client");
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void aClaimWhoseSessionMarkerCannotBeMadeLeavesNoClaimBehind() throws Exception {
        String path = ZooKeeperFixture.uniquePath("marker-refused");
        DistributedQueue<String> queue = queue(zk.newClient(), path);
        queue.offer("x");
        CuratorFramework hand = zk.newClient();
        hand.setACL()
                .withACL(List.of(new ACL(ZooDefs.Perms.ALL & ~ZooDefs.Perms.CREATE, new Id("world", "anyone"))))
                .forPath(path + "/sessions");

        assertThrows(CoordinationException.class, () -> queue.claim(Duration.ZERO));

        assertEquals(List.of(), hand.getChildren().forPath(path + "/claims"), "no claim was made");
        hand.setACL()
                .withACL(List.of(new ACL(ZooDefs.Perms.ALL, new Id("world", "anyone"))))
                .forPath(path + "/sessions");
        Claim<String> claim = queue.claim(Duration.ZERO).orElseThrow(); // the item is in play again
        assertEquals("x", claim.item());
        assertTrue(claim.ack());
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void anAckRefusedWhileTheClaimIsStillOursThrowsAndKeepsTheClaim() throws Exception {
        String path = ZooKeeperFixture.uniquePath("ack-refused");
        DistributedQueue<String> queue = queue(zk.newClient(), path);
        queue.offer("x");
        Claim<String> claim = queue.claim(WAIT).orElseThrow();
        CuratorFramework hand = zk.newClient();
        hand.setACL()
                .withACL(List.of(new ACL(ZooDefs.Perms.ALL & ~ZooDefs.Perms.DELETE, new Id("world", "anyone"))))
                .forPath(path + "/items");

        CoordinationException refused = assertThrows(CoordinationException.class, claim::ack);
        String item =
                path + "/items/" + hand.getChildren().forPath(path + "/items").get(0);
        assertEquals("acknowledging " + item + " failed: NOAUTH", refused.getMessage());
        assertTrue(claim.toString().endsWith(", HELD]"), claim.toString());

        hand.setACL()
                .withACL(List.of(new ACL(ZooDefs.Perms.ALL, new Id("world", "anyone"))))
                .forPath(path + "/items");
        assertTrue(claim.ack(), "still ours, and acknowledged once allowed");
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void closingAClaimWhileCutOffReturnsAtOnceAndItsReleaseGoesOutOnceConnected() throws Exception {
        String path = ZooKeeperFixture.uniquePath("close-cut-off");
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        CuratorFramework client = zk.newOutageProofClient(proxy);
        DistributedQueue<String> queue = queue(client, path);
        queue.offer("x");
        Claim<String> claim = queue.claim(WAIT).orElseThrow();
        long session = sessionOf(client);
        CountDownLatch suspended = ZooKeeperFixture.latchOn(client, ConnectionState.SUSPENDED);

        proxy.refuseConnections(true);
        proxy.cutConnections();
        assertTrue(suspended.await(10, TimeUnit.SECONDS));
        Background.call(() -> {
                    claim.close();
                    return null;
                })
                .get(10, TimeUnit.SECONDS); // Curator's retries would hold it for minutes
        proxy.refuseConnections(false);

        assertEquals("x", queue(zk.newClient(), path).poll(WAIT), "the item is back for every client");
        assertEquals(session, sessionOf(client), "the test needs one session");
        client.close();
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @Test
    void aReleaseSentAgainAfterALostConnectionMakesADeletedMarkerAgain() throws Exception {
        String path = ZooKeeperFixture.uniquePath("marker-deleted-resend");
        ZooKeeperProxy proxy = zk.ensemble().proxy(zk.ensemble().servers().get(0));
        // A session that outlives the cut below, and no retries by Curator: the queue sends the release again itself.
        CuratorFramework client = zk.newCustomClient(builder -> builder.connectString(proxy.connectString())
                .sessionTimeoutMs(15_000)
                .retryPolicy(new RetryNTimes(0, 0)));
        DistributedQueue<String> queue = queue(client, path);
        queue.offer("x");
        Claim<String> claim = queue.claim(Duration.ZERO).orElseThrow();
        long session = sessionOf(client);

        // The release cannot reach the server, and its marker is deleted meanwhile.
        proxy.refuseConnections(true);
        proxy.cutConnections();
        claim.close();
        deleteSessionMarkers(path);
        proxy.refuseConnections(false);

        assertEquals("x", queue(zk.newClient(), path).poll(WAIT), "the item is back for every client");
        assertEquals(session, sessionOf(client), "the test needs one session");
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    @ParameterizedTest(name = "closed while cut off: {0}")
    @ValueSource(booleans = {false, true})
    void claimsWhoseClientGaveUpOnTheirSessionFreeTheirItemsWithoutWaitingForTheServersExpiry(boolean closedWhileCutOff)
            throws Exception {
        String path = ZooKeeperFixture.uniquePath("given-up");
        CuratorFramework cutOff = zk.newClientGivingUpBeforeTheServer();
        Session old = Session.of(cutOff);
        DistributedQueue<String> claimer = queue(cutOff, path);
        List<String> items = List.of("x0", "x1", "x2", "x3", "x4", "x5");
        List<Claim<String>> claims = new ArrayList<>();
        for (String item : items) {
            claimer.offer(item);
            claims.add(claimer.claim(WAIT).orElseThrow());
        }
        CuratorFramework reader = zk.newOutageProofClient();
        DistributedQueue<String> next = queue(reader, path);
        next.offer("warm-up"); // the other consumer's own slot
        assertEquals("warm-up", next.poll());
        int slots = reader.getChildren().forPath(path + "/slots").size();

        zk.stopServer();
        if (closedWhileCutOff) {
            claims.forEach(Claim::close);
        }
        await().atMost(Duration.ofSeconds(20)).until(() -> sessionOf(cutOff) != old.id());
        zk.restartServer();

        List<String> freed = new ArrayList<>();
        for (int i = 0; i < items.size(); i++) {
            String item = next.poll(Duration.ofSeconds(15)); // in the order the claims are withdrawn
            assertNotNull(item, "an item still hidden by a claim of the old session");
            freed.add(item);
        }
        assertEquals(items, freed.stream().sorted().toList());
        assertTrue(zk.endSessionIfAlive(old), "the old session had already expired");
        for (Claim<String> claim : claims) {
            assertFalse(claim.ack(), "the claim died with the session its client gave up on");
            claim.close();
        }
        if (!closedWhileCutOff) { // each close sends its release at once, through a slot of its own
            assertEquals(
                    slots,
                    reader.getChildren().forPath(path + "/slots").size(),
                    "the withdrawals go one at a time, through a slot already made");
        }
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }

    private static void deleteSessionMarkers(String path) throws Exception {
        CuratorFramework hand = zk.newClient();
        for (String marker : hand.getChildren().forPath(path + "/sessions")) {
            hand.delete().forPath(path + "/sessions/" + marker);
        }
    }

    /** The claim made before the client's session expired, and the one made after it on the same item. */
    private record Claims(Claim<String> old, Claim<String> newer) {}

    /** Offers "x", claims it, expires the client's session, and claims it again. */
    private static Claims claimAgainAfterExpiry(CuratorFramework client, DistributedQueue<String> queue)
            throws Exception {
        queue.offer("x");
        Claim<String> old = queue.claim(WAIT).orElseThrow();
        expireAndReconnect(client);
        Claim<String> newer = queue.claim(WAIT).orElseThrow();
        assertEquals("x", newer.item());
        return new Claims(old, newer);
    }

    private static void assertNewerClaimStillHolds(DistributedQueue<String> queue, Claim<String> newer, String path)
            throws Exception {
        assertNull(queue.poll(), "the newer claim still hides the item");
        assertTrue(newer.ack(), "the newer claim is still ours");
        assertNull(queue.poll());
        QueueLeaks.assertDrainedAndNoLeaks(zk, path);
    }
}
