package io.coord.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.coord.testkit.ZooKeeperEnsemble;
import io.coord.testkit.ZooKeeperTest;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** Runs README's Spring example with README's properties. */
@ZooKeeperTest
class SpringReadmeExampleTest {
    @Test
    void billingChargesOnceAndLeadsTheBatch(ZooKeeperEnsemble zk) {
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(
                        CoordZooKeeperAutoConfiguration.class, CoordIntegrationAutoConfiguration.class))
                .withUserConfiguration(Billing.class)
                .withPropertyValues(
                        "coord.zookeeper.connect-string=" + zk.connectString(),
                        "coord.zookeeper.session-timeout=10s",
                        "coord.lock.root=/billing/locks",
                        "coord.leader.role=billing-batch")
                .run(context -> {
                    Billing billing = context.getBean(Billing.class);
                    assertThat(billing.charge("inv-1")).isTrue();
                    assertThat(billing.charge("inv-1")).isFalse();
                    await().until(() -> billing.batchEpoch() >= 0);
                });
    }
}
