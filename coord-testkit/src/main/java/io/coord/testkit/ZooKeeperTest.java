package io.coord.testkit;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * Runs a test class against an embedded ZooKeeper ensemble of its own: started before the class's first test,
 * stopped after its last. Fields and parameters of type {@link ZooKeeperEnsemble} receive it. After each test, the
 * clients, proxies and killed servers the test left are cleaned up: its clients are closed, its proxies closed, and
 * its killed servers restarted, so every test starts on a whole ensemble.
 *
 * <pre>{@code
 * @ZooKeeperTest(servers = 3)
 * class ShippingTest {
 *     static ZooKeeperEnsemble zk;
 *
 *     @Test
 *     void survivesAKilledServer() throws Exception {
 *         CuratorFramework client = zk.newClient();
 *         ...
 *         zk.killServerOf(client);
 *         ...
 *     }
 * }
 * }</pre>
 */
@Documented
@Inherited
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.TYPE)
@ExtendWith(ZooKeeperExtension.class)
// One ensemble per class, which each test resets as it ends: a test running beside another would reset its servers,
// clients and proxies under it.
@ResourceLock(providers = OneTestAtATime.class)
public @interface ZooKeeperTest {
    /** How many servers: 1 is a standalone server, 3 or more a quorum that survives losing a minority. */
    int servers() default 1;

    /** The session timeout of the clients the ensemble hands out, in milliseconds; between 2 and 20 seconds. */
    int sessionTimeoutMillis() default 4_000;
}
