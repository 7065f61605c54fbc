package io.coord.testkit;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.ZooDefs;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

@ZooKeeperTest(servers = 3)
class FaultsTest {
    static ZooKeeperEnsemble zk;

    @Test
    void expiringASessionDeletesItsEphemeralNodesAndTellsTheClient() throws Exception {
        CuratorFramework client = zk.newClient();
        List<ConnectionState> states = recordStates(client);
        client.create().withMode(CreateMode.EPHEMERAL).forPath("/expiring");
        long before = client.getZookeeperClient().getZooKeeper().getSessionId();

        assertEquals(before, zk.expireSession(client));

        CuratorFramework observer = zk.newClient();
        await().until(() -> observer.checkExists().forPath("/expiring") == null);
        await().until(() -> states.contains(ConnectionState.LOST) && states.contains(ConnectionState.RECONNECTED));
        assertNotEquals(before, client.getZookeeperClient().getZooKeeper().getSessionId());
    }

    @Test
    void aClientMovesOnWhenItsServerIsKilledAndTheServerComesBackWithItsData() throws Exception {
        // A session long enough to outlast an election, should the killed server be the leader.
        CuratorFramework client = zk.newClient(b -> b.sessionTimeoutMs(15_000));
        List<ConnectionState> states = recordStates(client);
        long session = client.getZookeeperClient().getZooKeeper().getSessionId();
        client.create().forPath("/survives", "x".getBytes());

        EmbeddedServer killed = zk.killServerOf(client);
        assertEquals(false, killed.isRunning());
        await().until(() -> states.contains(ConnectionState.RECONNECTED));
        assertEquals("x", new String(client.getData().forPath("/survives")));
        assertEquals(session, client.getZookeeperClient().getZooKeeper().getSessionId());
        assertNotEquals(killed, zk.serverOf(client));

        killed.restart();
        CuratorFramework direct = zk.newClient(killed.address());
        assertEquals("x", new String(direct.getData().forPath("/survives")));
        direct.delete().forPath("/survives");
    }

    @Test
    void killingOrRestartingTwiceIsAClearError() {
        EmbeddedServer server = zk.servers().get(2);
        server.kill();
        IllegalStateException killed = assertThrows(IllegalStateException.class, server::kill);
        assertEquals("server 3 (" + server.address() + ") is not running", killed.getMessage());
        server.restart();
        IllegalStateException running = assertThrows(IllegalStateException.class, server::restart);
        assertEquals("server 3 (" + server.address() + ") is already running", running.getMessage());
    }

    @Test
    void aClientCutOffForLessThanItsSessionKeepsItsSession() throws Exception {
        ZooKeeperProxy proxy = zk.proxy(zk.servers().get(0));
        CuratorFramework client = zk.newClient(proxy.connectString());
        List<ConnectionState> states = recordStates(client);
        long session = client.getZookeeperClient().getZooKeeper().getSessionId();
        client.create().withMode(CreateMode.EPHEMERAL).forPath("/cut-off");

        proxy.cutOff(Duration.ofSeconds(1));

        await().until(() -> states.contains(ConnectionState.SUSPENDED));
        await().until(() -> states.contains(ConnectionState.RECONNECTED));
        assertEquals(session, client.getZookeeperClient().getZooKeeper().getSessionId());
        assertTrue(!states.contains(ConnectionState.LOST), states.toString());
        client.delete().forPath("/cut-off");
    }

    @Test
    void aResetEndsTheSessionOfAClientThroughAProxySoItsEphemeralNodesGoAtOnce() throws Exception {
        EmbeddedServer server = zk.servers().get(0);
        ZooKeeperProxy proxy = zk.proxy(server);
        CuratorFramework client = zk.newClient(proxy.connectString());
        client.create().withMode(CreateMode.EPHEMERAL).forPath("/reset-proxied");

        zk.reset();

        // Read from the server the proxy led to, which answered the session's close.
        assertNull(zk.newClient(server.address()).checkExists().forPath("/reset-proxied"));
    }

    @Test
    void aResetEndsTheSessionOfAClientOfOneServerThatWasKilled() throws Exception {
        EmbeddedServer server = zk.servers().get(1);
        CuratorFramework client = zk.newClient(server.address());
        client.create().withMode(CreateMode.EPHEMERAL).forPath("/reset-one-server");
        server.kill();

        zk.reset(); // restarts the server, and waits for the client to reconnect there before closing it

        assertNull(zk.newClient(server.address()).checkExists().forPath("/reset-one-server"));
    }

    @Test
    void aCutConnectionLeavesNoRelayThreadBehindEvenOneParkedOnADelay() throws Exception {
        ZooKeeperProxy proxy = zk.proxy(zk.servers().get(2));
        CuratorFramework client = zk.newClient(proxy.connectString());
        proxy.delay(Duration.ofHours(1));
        client.checkExists().inBackground().forPath("/"); // its request waits half an hour in the proxy
        await().until(() -> relayThreads().size() == 4);

        proxy.refuseConnections(true);
        proxy.cutConnections();

        await().until(() -> relayThreads().isEmpty());
    }

    @Test
    void whatAServerSendsBeforeItClosesReachesTheClientAfterTheDelay() throws Exception {
        // A server that answers once and closes, as ZooKeeper does when it finds a session expired.
        byte[] packet = {0, 0, 0, 4, 1, 2, 3, 4};
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Thread answering = new Thread(() -> {
                try (Socket connection = server.accept()) {
                    connection.getOutputStream().write(packet);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
            answering.start();
            ZooKeeperProxy proxy = ZooKeeperProxy.start((InetSocketAddress) server.getLocalSocketAddress())
                    .delay(Duration.ofMillis(200));
            String address = proxy.connectString();
            int port = Integer.parseInt(address.substring(address.lastIndexOf(':') + 1));
            try (Socket client = new Socket(InetAddress.getLoopbackAddress(), port)) {
                assertArrayEquals(packet, client.getInputStream().readAllBytes());
            } finally {
                proxy.close();
                answering.join();
            }
        }
    }

    /** The threads of every proxy's open connections: four each. */
    private static List<String> relayThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .map(Thread::getName)
                .filter(name -> name.startsWith("zk-proxy-") && !name.startsWith("zk-proxy-accept-"))
                .toList();
    }

    @Test
    void aDelayedProxyAddsItsRoundTripToEveryRequest() throws Exception {
        ZooKeeperProxy proxy = zk.proxy(zk.servers().get(1));
        CuratorFramework client = zk.newClient(proxy.connectString());
        Duration rtt = Duration.ofMillis(100);
        proxy.delay(rtt);

        long start = System.nanoTime();
        client.checkExists().forPath("/");
        client.checkExists().forPath("/");
        // A lower bound only: the proxy can hold a request back, never hurry it.
        assertTrue(System.nanoTime() - start >= rtt.multipliedBy(2).toNanos());

        IllegalArgumentException negative =
                assertThrows(IllegalArgumentException.class, () -> proxy.delay(Duration.ofMillis(-1)));
        assertEquals("rtt must be between 0 and PT24H, was PT-0.001S", negative.getMessage());
        IllegalArgumentException endless =
                assertThrows(IllegalArgumentException.class, () -> proxy.cutOff(Duration.ofDays(400_000)));
        assertEquals("period must be between 0 and PT24H, was PT9600000H", endless.getMessage());
    }

    @Test
    void aLostReplyMakesARetriedCreateMeetItsOwnNode() throws Exception {
        ZooKeeperProxy proxy = zk.proxy(zk.servers().get(0));
        CuratorFramework client =
                zk.newClient(b -> b.connectString(proxy.connectString()).retryPolicy(new RetryNTimes(5, 100)));

        proxy.dropNextReply();

        // The create lands, its reply is lost with the connection, and Curator's retry finds the node.
        assertThrows(
                KeeperException.NodeExistsException.class, () -> client.create().forPath("/replayed"));
        assertEquals(1, proxy.repliesLost());
        client.delete().forPath("/replayed");
        assertNull(client.checkExists().forPath("/replayed"));
    }

    @Test
    void aRefusedRequestIsNotCarriedOutAndIsAnsweredInItsTurn() throws Exception {
        ZooKeeperProxy proxy = zk.proxy(zk.servers().get(0));
        CuratorFramework client = zk.newClient(proxy.connectString());
        client.create().forPath("/refused", "x".getBytes());
        IllegalArgumentException noRequest = assertThrows(
                IllegalArgumentException.class, () -> proxy.refuseNext(0, KeeperException.Code.THROTTLEDOP));
        assertEquals(
                "opCode must be the code of a request that is answered in its turn (not a ping, an auth or a"
                        + " setWatches), was 0",
                noRequest.getMessage());
        assertThrows(
                IllegalArgumentException.class,
                () -> proxy.refuseNext(ZooDefs.OpCode.ping, KeeperException.Code.THROTTLEDOP));
        IllegalArgumentException ok = assertThrows(
                IllegalArgumentException.class, () -> proxy.refuseNext(ZooDefs.OpCode.delete, KeeperException.Code.OK));
        assertEquals("code must be an error: a refusal carries no answer's body", ok.getMessage());
        assertThrows(NullPointerException.class, () -> proxy.refuseNext(ZooDefs.OpCode.delete, null));

        proxy.refuseNext(ZooDefs.OpCode.delete, KeeperException.Code.THROTTLEDOP);
        // Three requests in flight at once, the refused one in the middle: each answer comes in its turn.
        CompletableFuture<Integer> before = new CompletableFuture<>();
        CompletableFuture<Integer> refused = new CompletableFuture<>();
        CompletableFuture<Integer> after = new CompletableFuture<>();
        client.getData()
                .inBackground((c, e) -> before.complete(e.getResultCode()))
                .forPath("/refused");
        client.delete()
                .inBackground((c, e) -> refused.complete(e.getResultCode()))
                .forPath("/refused");
        client.getData()
                .inBackground((c, e) -> after.complete(e.getResultCode()))
                .forPath("/refused");

        assertEquals(KeeperException.Code.OK.intValue(), before.get(10, TimeUnit.SECONDS));
        assertEquals(KeeperException.Code.THROTTLEDOP.intValue(), refused.get(10, TimeUnit.SECONDS));
        assertEquals(KeeperException.Code.OK.intValue(), after.get(10, TimeUnit.SECONDS), "never deleted");
        assertArrayEquals("x".getBytes(), client.getData().forPath("/refused"));
        assertEquals(1, proxy.requestsRefused());
        client.delete().forPath("/refused"); // only the next one was refused
        assertNull(client.checkExists().forPath("/refused"));
        client.close();
        proxy.close();
    }

    @Test
    void aRequestToBreakOnBreaksItsConnectionAndNeverReachesTheServer() throws Exception {
        ZooKeeperProxy proxy = zk.proxy(zk.servers().get(0));
        CuratorFramework client = zk.newClient(proxy.connectString());
        client.create().forPath("/broken");
        IllegalArgumentException noRequest =
                assertThrows(IllegalArgumentException.class, () -> proxy.breakOnNext(ZooDefs.OpCode.setWatches2));
        assertEquals(
                "opCode must be the code of a request that is answered in its turn (not a ping, an auth or a"
                        + " setWatches), was " + ZooDefs.OpCode.setWatches2,
                noRequest.getMessage());

        proxy.breakOnNext(ZooDefs.OpCode.delete);
        // Through the handle, which does not send it again as Curator would.
        CompletableFuture<Integer> lost = new CompletableFuture<>();
        client.getZookeeperClient().getZooKeeper().delete("/broken", -1, (rc, path, ctx) -> lost.complete(rc), null);

        assertEquals(KeeperException.Code.CONNECTIONLOSS.intValue(), lost.get(10, TimeUnit.SECONDS));
        assertNotNull(client.checkExists().forPath("/broken"), "never deleted");
        assertEquals(1, proxy.requestsRefused());
        client.delete().forPath("/broken"); // only the next one breaks
        assertNull(client.checkExists().forPath("/broken"));
        client.close();
        proxy.close();
    }

    @Test
    void badSettingsAreRefusedBeforeAnythingStarts() {
        IllegalArgumentException servers = assertThrows(
                IllegalArgumentException.class,
                () -> ZooKeeperEnsemble.builder().servers(0));
        assertEquals("servers must be at least 1, was 0", servers.getMessage());
        IllegalArgumentException session = assertThrows(
                IllegalArgumentException.class,
                () -> ZooKeeperEnsemble.builder().sessionTimeout(Duration.ofSeconds(30)));
        assertEquals("sessionTimeout must be between 2 s and 20 s, was PT30S", session.getMessage());
        assertThrows(
                NullPointerException.class, () -> ZooKeeperEnsemble.builder().sessionTimeout(null));
    }

    @Test
    void anEnsembleUsedAfterItClosedSaysSo() throws Exception {
        ZooKeeperEnsemble closed = ZooKeeperEnsemble.builder().start();
        EmbeddedServer server = closed.servers().get(0);
        closed.close();
        String expected = "this ensemble (" + closed.connectString()
                + ") was closed with its test class: use the one of the" + " running test";
        assertEquals(
                expected,
                assertThrows(IllegalStateException.class, closed::newClient).getMessage());
        assertEquals(
                expected,
                assertThrows(IllegalStateException.class, () -> closed.proxy(server))
                        .getMessage());
        // The checks and faults too, where they would ask ports the ensemble gave back, or another ensemble took.
        for (Executable call : List.<Executable>of(
                () -> closed.assertNoZnodesUnder("/a"),
                () -> closed.assertNoWatchesUnder("/a"),
                () -> closed.assertNoLeaksUnder("/a"),
                () -> closed.watchesUnder("/a"),
                closed::watchCount,
                () -> closed.expireSession(zk.newClient()),
                () -> closed.serverOf(zk.newClient()))) {
            assertEquals(
                    expected, assertThrows(IllegalStateException.class, call).getMessage());
        }
    }

    @Test
    void serverOfAProxiedClientIsAClearError() throws Exception {
        ZooKeeperProxy proxy = zk.proxy(zk.servers().get(0));
        CuratorFramework client = zk.newClient(proxy.connectString());
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> zk.serverOf(client));
        assertEquals(
                "the client is not connected straight to a server of this ensemble (through a proxy, or not at all)",
                e.getMessage());
    }

    private static List<ConnectionState> recordStates(CuratorFramework client) {
        List<ConnectionState> states = new CopyOnWriteArrayList<>();
        client.getConnectionStateListenable().addListener((c, state) -> states.add(state));
        return states;
    }
}
