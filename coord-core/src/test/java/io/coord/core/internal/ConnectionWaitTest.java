package io.coord.core.internal;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;

import io.coord.testkit.ZooKeeperFixture;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.state.ConnectionState;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Waits for the connection share one future per outage, so that those that give up leave nothing behind. */
@Timeout(60)
class ConnectionWaitTest {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Test
    void everyWaitOfOneOutageSharesOneFutureThatTheNextConnectionCompletes() throws Exception {
        CuratorFramework client = zk.unstartedClient();
        ClientContext context = ClientContext.of(client);
        client.start();
        await().until(() -> context.connectionEpoch() > 0); // the news of the first connection is in
        context.stateChanged(client, ConnectionState.SUSPENDED); // as the context hears of a drop

        CompletableFuture<Void> first = context.connected();
        for (int i = 0; i < 1_000; i++) {
            assertSame(first, context.connected(), "wait " + i + " of the outage made a future of its own");
        }
        assertFalse(first.isDone());

        context.stateChanged(client, ConnectionState.RECONNECTED);
        first.get(10, TimeUnit.SECONDS);
        CompletableFuture<Void> next = context.connected();
        assertNotSame(first, next, "a wait after the connection came back is not answered by the last one");
        next.get(10, TimeUnit.SECONDS); // connected: answered at once
    }
}
