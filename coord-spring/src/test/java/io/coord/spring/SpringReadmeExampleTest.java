package io.coord.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.coord.testkit.ZooKeeperEnsemble;
import io.coord.testkit.ZooKeeperTest;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** Runs README's Spring example with README's properties, as two instances of the service sharing one database. */
@ZooKeeperTest
class SpringReadmeExampleTest {
    @Test
    void twoInstancesChargeEachInvoiceOnceAndOneLeadsTheBatch(ZooKeeperEnsemble zk) {
        Invoices database = new Invoices();
        ApplicationContextRunner instance = new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(
                        CoordZooKeeperAutoConfiguration.class, CoordIntegrationAutoConfiguration.class))
                .withBean(Invoices.class, () -> database)
                .withUserConfiguration(Billing.class)
                .withPropertyValues(
                        "coord.zookeeper.connect-string=" + zk.connectString(),
                        "coord.zookeeper.session-timeout=10s",
                        "coord.lock.root=/billing/locks",
                        "coord.leader.role=billing-batch");
        instance.run(first -> instance.run(second -> {
            List<Billing> instances = List.of(first.getBean(Billing.class), second.getBean(Billing.class));
            // Both instances are asked for the same five invoices, four times each, all at once.
            List<Callable<Boolean>> charges = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                Billing billing = instances.get(i % 2);
                String invoice = "inv-" + (i % 5);
                charges.add(() -> billing.charge(invoice));
            }
            ExecutorService callers = Executors.newFixedThreadPool(charges.size());
            long charged = 0;
            try {
                for (Future<Boolean> charge : callers.invokeAll(charges)) {
                    charged += charge.get() ? 1 : 0;
                }
            } finally {
                callers.shutdown();
            }
            assertThat(charged).isEqualTo(5);

            await().until(() -> instances.stream().anyMatch(b -> b.batchEpoch() >= 0));
            assertThat(instances.stream().filter(b -> b.batchEpoch() >= 0)).hasSize(1);
        }));
    }
}
