package io.coord.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.coord.testkit.ZooKeeperEnsemble;
import io.coord.testkit.ZooKeeperTest;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** README's Spring Boot test: the application's context on coord-testkit's ensemble. */
// README: spring-boot-test begin
@ZooKeeperTest(servers = 3) // before @SpringBootTest: the ensemble is up when the context starts
@SpringBootTest(classes = BillingApplication.class, properties = "coord.leader.role=billing-batch")
@DirtiesContext // the context's CuratorFramework closes with the class, before the ensemble stops
class BillingApplicationTest {
    static ZooKeeperEnsemble zk;

    @DynamicPropertySource
    static void zookeeper(DynamicPropertyRegistry registry) {
        registry.add("coord.zookeeper.connect-string", () -> zk.connectString());
    }

    @Autowired
    Billing billing;

    @Test
    void chargesOnceAndLeadsTheBatch() throws Exception {
        assertThat(billing.charge("inv-7")).isTrue();
        assertThat(billing.charge("inv-7")).isFalse();
        await().until(() -> billing.batchEpoch() >= 0);
    }
}
// README: spring-boot-test end
