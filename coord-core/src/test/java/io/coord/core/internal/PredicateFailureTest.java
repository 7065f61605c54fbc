package io.coord.core.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.coord.core.CoordinationException;
import io.coord.core.Lease;
import io.coord.core.LeasePredicate;
import io.coord.testkit.ZooKeeperFixture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** A predicate that throws fails its acquisition loudly, says so in words that fit, and leaves no node queued. */
@Timeout(60)
class PredicateFailureTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Test
    void aPredicateThatThrowsFailsTheAcquisitionAndItsNodeGoes() throws Exception {
        String path = ZooKeeperFixture.uniquePath("broken-predicate");
        CuratorFramework client = zk.newClient();
        LeasePredicate broken = (children, ourIndex) -> {
            throw new IllegalStateException("a broken predicate");
        };
        LeaseEngine engine = new LeaseEngine(client, path, "lock-", broken, new byte[0]);

        ExecutionException failed = assertThrows(
                ExecutionException.class, () -> engine.acquireAsync().get(10, TimeUnit.SECONDS));
        CoordinationException error = assertInstanceOf(CoordinationException.class, failed.getCause());
        assertEquals(
                "the acquisition failed on " + path + ": java.lang.IllegalStateException: a broken predicate",
                error.getMessage());
        assertInstanceOf(IllegalStateException.class, error.getCause());

        LeaseEngine sound = new LeaseEngine(client, path, "lock-", LeasePredicate.maxLeases(1), new byte[0]);
        Lease lease = sound.acquireAsync().get(10, TimeUnit.SECONDS);
        lease.close();
        zk.assertNoLeaks(path);
    }
}
