package io.coord.core.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.coord.core.Lease;
import io.coord.core.LeasePredicate;
import io.coord.testkit.ZooKeeperFixture;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.state.ConnectionState;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** An engine whose primitive keeps a record at its path enters the queue only once the record is checked. */
@Timeout(60)
class PathRecordTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    /** A record whose check answers when the test says. */
    private static final class Gate implements PathRecord {
        final CompletableFuture<Boolean> answer = new CompletableFuture<>();

        @Override
        public CompletableFuture<Boolean> check(boolean oneLook) {
            return answer;
        }

        @Override
        public CompletableFuture<Boolean> checkAgain(boolean oneLook) {
            return answer;
        }

        @Override
        public long checkedOn() {
            return 0; // never passed: this test's check fails
        }

        @Override
        public CompletableFuture<Void> makePath() {
            return CompletableFuture.completedFuture(null);
        }
    }

    @Test
    void anAttemptWhoseSessionEndsWhileItsRecordIsCheckedDoesNotEnterUnchecked() throws Exception {
        String path = ZooKeeperFixture.uniquePath("record-gate");
        CuratorFramework client = zk.newClient();
        client.create().creatingParentsIfNeeded().forPath(path);
        Gate gate = new Gate();
        LeaseEngine engine = new LeaseEngine(
                client,
                path,
                "lock-",
                LeasePredicate.maxLeases(1),
                "gated".getBytes(StandardCharsets.UTF_8),
                Deadline.SYSTEM_TICKER,
                "mutex",
                gate);
        CompletableFuture<Lease> acquired = engine.acquireAsync();

        // The news of a session's end makes waiting attempts queue again on the next one; this one has not queued.
        ClientContext.of(client).stateChanged(client, ConnectionState.LOST);
        assertEquals(List.of(), client.getChildren().forPath(path), "nothing created before the check answered");

        gate.answer.completeExceptionally(new IllegalStateException("the path records another limit"));
        ExecutionException refused = assertThrows(ExecutionException.class, () -> acquired.get(10, TimeUnit.SECONDS));
        assertInstanceOf(IllegalStateException.class, refused.getCause());
        assertEquals(List.of(), client.getChildren().forPath(path));
        client.delete().forPath(path);
        zk.assertNoLeaks(path);
    }
}
