package io.coord.election;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.CoordinationException;
import io.coord.testkit.Background;
import io.coord.testkit.ZooKeeperFixture;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Every argument a user can get wrong, and the message they see. */
class ElectionArgumentsTest {
    private static final LeadershipTask IDLE = term -> {};

    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Test
    void awaitingLeadershipOnZooKeepersEventThreadIsRefusedUnlessItNeedNotWait() throws Exception {
        String path = ZooKeeperFixture.uniquePath("event-thread");
        CuratorFramework client = zk.newClient();
        LeaderLatch first = new LeaderLatch(client, path, "first");
        first.start();
        assertTrue(first.await(Duration.ofSeconds(10)));
        LeaderLatch second = new LeaderLatch(client, path, "second");
        second.start();
        await().until(() -> first.participants().size() == 2);

        Throwable refused = Background.thrownOnEventThread(client, () -> {
            second.await();
            return null;
        });
        assertEquals(
                "awaiting leadership at " + path + " waits for ZooKeeper's answers, which ZooKeeper's event thread"
                        + " delivers: call it from another thread than a watcher or a background callback",
                refused.getMessage());
        AtomicReference<Boolean> leads = new AtomicReference<>();
        assertNull(Background.thrownOnEventThread(client, () -> leads.getAndSet(first.await(Duration.ofSeconds(10)))));
        assertEquals(true, leads.get(), "a leader need not wait");
        assertNull(Background.thrownOnEventThread(client, () -> leads.getAndSet(second.await(Duration.ZERO))));
        assertEquals(false, leads.get(), "a look never waits");
        second.close();
        first.close();
        zk.assertNoLeaks(path);
    }

    @Test
    void nullClientIsRefused() {
        assertMessage(NullPointerException.class, "client must not be null", () -> new LeaderLatch(null, "/e", "id"));
        assertMessage(
                NullPointerException.class,
                "client must not be null",
                () -> new LeaderSelector(null, "/e", "id", IDLE));
        assertMessage(NullPointerException.class, "client must not be null", () -> new LeaderObserver(null, "/e"));
    }

    @Test
    void nullPathIsRefused() {
        CuratorFramework client = zk.unstartedClient();
        String message = "path must not be null";
        assertMessage(IllegalArgumentException.class, message, () -> new LeaderLatch(client, null, "id"));
        assertMessage(IllegalArgumentException.class, message, () -> new LeaderSelector(client, null, "id", IDLE));
        assertMessage(IllegalArgumentException.class, message, () -> new LeaderObserver(client, null));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "election", "/election/", "/a//b", "/a/./b", "/"})
    void invalidPathIsRefused(String path) {
        CuratorFramework client = zk.unstartedClient();
        for (Executable constructor : new Executable[] {
            () -> new LeaderLatch(client, path, "id"),
            () -> new LeaderSelector(client, path, "id", IDLE),
            () -> new LeaderObserver(client, path)
        }) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, constructor);
            assertTrue(e.getMessage().contains("\"" + path + "\""), e.getMessage());
        }
    }

    @Test
    void participantIdTaskListenerAndExecutorMustBePresent() {
        CuratorFramework client = zk.unstartedClient();
        assertMessage(
                NullPointerException.class,
                "participantId must not be null",
                () -> new LeaderLatch(client, "/e", null));
        assertMessage(
                NullPointerException.class,
                "participantId must not be null",
                () -> new LeaderSelector(client, "/e", null, IDLE));
        assertMessage(
                NullPointerException.class,
                "task must not be null",
                () -> new LeaderSelector(client, "/e", "id", null));
        LeaderLatch latch = new LeaderLatch(client, "/e", "id");
        assertMessage(
                NullPointerException.class, "listener must not be null", () -> latch.addListener(null, Runnable::run));
        assertMessage(
                NullPointerException.class,
                "executor must not be null",
                () -> latch.addListener(LeaderLatchTest.recorder("x", new java.util.ArrayList<>()), null));
        LeaderObserver observer = new LeaderObserver(client, "/e");
        assertMessage(
                NullPointerException.class,
                "listener must not be null",
                () -> observer.addListener(null, Runnable::run));
        assertMessage(
                NullPointerException.class, "executor must not be null", () -> observer.addListener(l -> {}, null));
    }

    @Test
    void awaitNeedsAStartedLatchAndAValidTimeout() {
        LeaderLatch latch = new LeaderLatch(zk.unstartedClient(), "/e", "id");
        assertMessage(NullPointerException.class, "timeout must not be null", () -> latch.await(null));
        assertMessage(
                IllegalArgumentException.class,
                "timeout must not be negative: PT-1S",
                () -> latch.await(Duration.ofSeconds(-1)));
        assertMessage(IllegalStateException.class, "not started: " + latch, latch::await);
        assertMessage(IllegalStateException.class, "not started: " + latch, () -> latch.await(Duration.ZERO));
    }

    @Test
    void startingTwiceOrAfterCloseIsRefused() throws Exception {
        String path = ZooKeeperFixture.uniquePath("twice");
        CuratorFramework client = zk.newClient();
        LeaderLatch latch = new LeaderLatch(client, path, "id");
        latch.start();
        assertStartRefused(latch::start);
        latch.close();
        assertStartAfterCloseRefused(latch, latch::start);

        LeaderSelector selector = new LeaderSelector(client, path, "id", IDLE);
        selector.start();
        assertStartRefused(selector::start);
        selector.close();
        assertStartAfterCloseRefused(selector, selector::start);

        LeaderObserver observer = new LeaderObserver(client, path);
        observer.start();
        assertStartRefused(observer::start);
        observer.close();
        assertStartAfterCloseRefused(observer, observer::start);
        zk.assertNoLeaks(path);
    }

    @Test
    void startingAfterACloseThatCameFirstIsRefusedAsClosed() throws Exception {
        String path = ZooKeeperFixture.uniquePath("closed-first");
        CuratorFramework client = zk.newClient();
        LeaderLatch latch = new LeaderLatch(client, path, "id");
        latch.close();
        assertStartAfterCloseRefused(latch, latch::start);
        LeaderSelector selector = new LeaderSelector(client, path, "id", IDLE);
        selector.close();
        assertStartAfterCloseRefused(selector, selector::start);
        LeaderObserver observer = new LeaderObserver(client, path);
        observer.close();
        assertStartAfterCloseRefused(observer, observer::start);
        zk.assertNoLeaks(path);
    }

    @Test
    void constructorsDoNoIoAndStartNeedsAStartedClient() {
        CuratorFramework client = zk.unstartedClient();
        LeaderLatch latch = new LeaderLatch(client, "/e/latch", "id");
        assertMessage(
                IllegalStateException.class,
                "the client must be started before joining the election at /e/latch",
                latch::start);
        LeaderSelector selector = new LeaderSelector(client, "/e/selector", "id", IDLE);
        assertMessage(IllegalStateException.class, "not started: " + selector, selector::requeue);
        assertMessage(
                IllegalStateException.class,
                "the client must be started before joining the election at /e/selector",
                selector::start);
        LeaderObserver observer = new LeaderObserver(client, "/e/observer");
        assertMessage(
                IllegalStateException.class,
                "the client must be started before observing /e/observer",
                observer::start);
    }

    @Test
    void startOnAClosedClientFailsAndLeavesNothing() throws Exception {
        String path = ZooKeeperFixture.uniquePath("closed-client");
        CuratorFramework client = zk.newClient();
        client.close();
        LeaderLatch latch = new LeaderLatch(client, path + "/latch", "id");
        LeaderSelector selector = new LeaderSelector(client, path + "/selector", "id", IDLE);
        LeaderObserver observer = new LeaderObserver(client, path + "/observer");
        // A start refused for its client's sake leaves nothing started: asked again, it says the same.
        for (int attempt = 0; attempt < 2; attempt++) {
            assertMessage(
                    CoordinationException.class,
                    "the client is closed: cannot join the election at " + path + "/latch",
                    latch::start);
            assertMessage(
                    CoordinationException.class,
                    "the client is closed: cannot join the election at " + path + "/selector",
                    selector::start);
        }
        assertMessage(
                CoordinationException.class,
                "the client is closed: cannot observe " + path + "/observer",
                observer::start);
        assertFalse(observer.leader().isPresent());
        observer.close();
        zk.assertNoLeaks(path);
    }

    private static void assertStartRefused(Executable start) {
        IllegalStateException e = assertThrows(IllegalStateException.class, start);
        assertTrue(e.getMessage().startsWith("already started"), e.getMessage());
    }

    private static void assertStartAfterCloseRefused(Object closed, Executable start) {
        assertMessage(IllegalStateException.class, "closed: " + closed + " cannot be started again", start);
    }

    private static void assertMessage(Class<? extends Throwable> type, String message, Executable call) {
        assertEquals(message, assertThrows(type, call).getMessage());
    }
}
