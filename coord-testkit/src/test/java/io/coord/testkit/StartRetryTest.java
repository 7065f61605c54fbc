package io.coord.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.curator.test.InstanceSpec;
import org.junit.jupiter.api.Test;

/** A port taken between being picked and being bound: the start is tried again, and the JVM lives on. */
class StartRetryTest {
    @Test
    void aServerThatCannotBindItsPortIsStartedAgainOnFreshPorts() throws Exception {
        try (ServerSocket taken = new ServerSocket(0)) {
            ZooKeeperEnsemble.Builder builder = ZooKeeperEnsemble.builder().servers(3);
            List<Integer> attempts = new CopyOnWriteArrayList<>();
            builder.startWith(
                    attempt -> {
                        attempts.add(attempt);
                        List<InstanceSpec> specs = new ArrayList<>(builder.freshSpecs());
                        if (attempt == 1) {
                            specs.set(0, ZooKeeperEnsemble.Builder.spec(1, taken.getLocalPort()));
                        }
                        return specs;
                    },
                    Duration.ofSeconds(10));

            try (ZooKeeperEnsemble zk = builder.start()) {
                assertEquals(List.of(1, 2), attempts);
                assertNotEquals(taken.getLocalPort(), zk.servers().get(0).port());
                zk.newClient().checkExists().forPath("/");
            }
        }
    }
}
