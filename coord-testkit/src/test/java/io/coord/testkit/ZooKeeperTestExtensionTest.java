package io.coord.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.ArrayList;
import java.util.List;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.imps.CuratorFrameworkState;
import org.apache.zookeeper.CreateMode;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

@ZooKeeperTest
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ZooKeeperTestExtensionTest {
    static ZooKeeperEnsemble shared;
    private static final List<CuratorFramework> EARLIER_CLIENTS = new ArrayList<>();

    ZooKeeperEnsemble perTest;

    @Test
    @Order(1)
    void injectsTheSameEnsembleIntoStaticFieldsInstanceFieldsAndParameters(ZooKeeperEnsemble parameter)
            throws Exception {
        assertNotNull(shared);
        assertSame(shared, perTest);
        assertSame(shared, parameter);
        assertEquals(1, shared.servers().size());
        assertEquals(ZooKeeperEnsemble.DEFAULT_SESSION_TIMEOUT, shared.sessionTimeout());

        CuratorFramework client = shared.newClient();
        client.create().forPath("/kept", "data".getBytes());
        EARLIER_CLIENTS.add(client);
    }

    @Test
    @Order(2)
    void closesEachTestsClientsAfterItAndKeepsTheDataForTheClass() throws Exception {
        assertEquals(CuratorFrameworkState.STOPPED, EARLIER_CLIENTS.get(0).getState());
        CuratorFramework client = shared.newClient();
        assertEquals("data", new String(client.getData().forPath("/kept")));
        client.delete().forPath("/kept");
    }

    @Test
    @Order(3)
    void restartsAServerATestLeftKilled() throws Exception {
        CuratorFramework client = shared.newClient();
        client.create().withMode(CreateMode.EPHEMERAL).forPath("/left-behind");
        EmbeddedServer server = shared.killServerOf(client);
        EARLIER_CLIENTS.add(null);
        assertEquals(false, server.isRunning());
    }

    @Test
    @Order(4)
    void startsTheNextTestOnAWholeEnsemble() throws Exception {
        assertEquals(true, shared.servers().get(0).isRunning());
        // The server came back before the last test's client closed, so that its session ended with it.
        assertNull(shared.newClient().checkExists().forPath("/left-behind"));
    }

    @Nested
    @ZooKeeperTest(servers = 3)
    class NestedTestsWithTheirOwnSettings {
        @Test
        void haveTheirOwnEnsemble(ZooKeeperEnsemble parameter) throws Exception {
            assertNotSame(shared, parameter);
            assertEquals(3, parameter.servers().size());
            // Killed whole, and brought back one by one: a lone member cannot serve, so its restart does not wait.
            parameter.servers().forEach(EmbeddedServer::kill);
            parameter.servers().forEach(EmbeddedServer::restart);
            parameter.newClient().create().forPath("/after-a-total-outage");
        }
    }

    @Nested
    class NestedTests {
        @Test
        void shareTheEnclosingClassEnsemble(ZooKeeperEnsemble parameter) {
            assertSame(shared, parameter);
            assertSame(shared, perTest);
        }
    }
}
