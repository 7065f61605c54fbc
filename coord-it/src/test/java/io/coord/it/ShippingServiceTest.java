package io.coord.it;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.mutex.ReentrantMutex;
import io.coord.testkit.ZooKeeperEnsemble;
import io.coord.testkit.ZooKeeperTest;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.Test;

/** The example of README's "Testing your service": a service on coord, tested with coord-testkit. */
// README: testing-your-service begin
@ZooKeeperTest(servers = 3)
class ShippingServiceTest {
    static ZooKeeperEnsemble zk; // injected: one ensemble for the class, its clients closed after each test

    /** The service under test: ships each order once, under the order's lock. */
    static final class Shipping {
        private final CuratorFramework client;
        private final Set<String> shipped = ConcurrentHashMap.newKeySet();

        Shipping(CuratorFramework client) {
            this.client = client;
        }

        boolean ship(String order) throws InterruptedException {
            ReentrantMutex lock = new ReentrantMutex(client, "/shipping/locks/" + order);
            if (!lock.acquire(Duration.ofSeconds(10))) {
                return false;
            }
            try {
                return shipped.add(order);
            } finally {
                lock.release();
            }
        }
    }

    @Test
    void keepsShippingWhenItsServerIsKilled() throws Exception {
        CuratorFramework client = zk.newClient();
        Shipping shipping = new Shipping(client);
        assertTrue(shipping.ship("order-1"));

        zk.killServerOf(client); // the client moves to another server and keeps its session

        assertTrue(shipping.ship("order-2"));
        assertFalse(shipping.ship("order-1"), "shipped twice");
        zk.assertNoLeaksUnder("/shipping/locks/order-2"); // no lock node and no watch left behind
    }

    @Test
    void waitsOutASessionExpiry() throws Exception {
        CuratorFramework client = zk.newClient();
        Shipping shipping = new Shipping(client);

        zk.expireSession(client); // as a long partition would: the servers end the session

        assertTrue(shipping.ship("order-3")); // Curator opens a new session, and the lock works on it
    }
}
// README: testing-your-service end
