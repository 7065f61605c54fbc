package io.coord.it;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.Participant;
import io.coord.election.LeaderLatch;
import io.coord.election.LeaderObserver;
import io.coord.testkit.EngineMode;
import io.coord.testkit.ZooKeeperFixture;
import io.coord.testkit.ZooKeeperProxy;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.retry.RetryNTimes;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** What an observer's listeners last heard stays true through faults, once its client is connected again. */
class LeaderObserverIT {
    @RegisterExtension
    static final ClusterFixture cluster = new ClusterFixture();

    /**
     * The old leader's node goes, and the observer's read of the new leader's id is lost with the connection. While
     * it is cut off the new leader goes too. Once back, it finds nobody leading, and its listeners, who last heard of
     * the old leader, must hear so.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(EngineMode.class)
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void listenersHearThatNobodyLeadsAfterTheReadOfTheNewLeaderFailedAndItLeftMeanwhile(EngineMode mode)
            throws Exception {
        cluster.mode(mode);
        String path = ZooKeeperFixture.uniquePath("observed");
        try (ZooKeeperProxy proxy =
                ZooKeeperProxy.start(cluster.servers().get(0).socketAddress())) {
            // No retries: the lost read fails instead of being sent again once connected.
            CuratorFramework observerClient =
                    cluster.newClient(proxy.connectString(), builder -> builder.retryPolicy(new RetryNTimes(0, 0)));
            LeaderObserver observer = new LeaderObserver(observerClient, path);
            List<Optional<Participant>> heard = new CopyOnWriteArrayList<>();
            observer.addListener(heard::add, Runnable::run);
            observer.start();

            CuratorFramework direct = cluster.newClient();
            LeaderLatch old = new LeaderLatch(direct, path, "old");
            LeaderLatch next = new LeaderLatch(direct, path, "next");
            old.start();
            assertTrue(old.await(Duration.ofSeconds(10)));
            next.start();
            await().until(() -> old.participants().size() == 2);
            await().until(() -> lastHeard(heard).equals("old"));

            proxy.dropNextReply();
            proxy.refuseConnections(true);
            old.close();
            await("the observer's next read is lost").until(() -> proxy.repliesLost() == 1);
            next.close();
            await().until(() -> direct.getChildren().forPath(path).isEmpty());
            proxy.refuseConnections(false);

            await("the listeners hear that nobody leads")
                    .until(() -> lastHeard(heard).equals("nobody"));
            assertTrue(observer.leader().isEmpty());
            observer.close();
        }
        cluster.closeClientsAndAssertNoLeaks(path);
    }

    private static String lastHeard(List<Optional<Participant>> heard) {
        return heard.isEmpty()
                ? "nothing"
                : heard.get(heard.size() - 1).map(Participant::id).orElse("nobody");
    }
}
