package io.coord.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.coord.testkit.ZooKeeperEnsemble;
import io.coord.testkit.ZooKeeperTest;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.imps.CuratorFrameworkState;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.NoUniqueBeanDefinitionException;
import org.springframework.boot.LazyInitializationBeanFactoryPostProcessor;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ApplicationListener;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.integration.leader.event.AbstractLeaderEvent;
import org.springframework.integration.leader.event.OnGrantedEvent;
import org.springframework.integration.support.locks.DefaultLockRegistry;
import org.springframework.integration.support.locks.LockRegistry;

@ZooKeeperTest
class CoordAutoConfigurationTest {
    static ZooKeeperEnsemble zk;

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(
                    CoordZooKeeperAutoConfiguration.class,
                    CoordIntegrationAutoConfiguration.class,
                    CoordLeaderRoleAutoConfiguration.class));

    @Test
    void aConnectStringGivesAStartedClientClosedWithTheContextAndALockRegistry() {
        AtomicReference<CuratorFramework> client = new AtomicReference<>();
        runner.withPropertyValues(
                        "coord.zookeeper.connect-string=" + zk.connectString(),
                        "coord.zookeeper.session-timeout=4s",
                        "coord.zookeeper.namespace=app",
                        "coord.lock.root=/app-locks")
                .run(context -> {
                    assertThat(context).hasSingleBean(CuratorFramework.class);
                    assertThat(context).hasSingleBean(CoordLockRegistry.class);
                    assertThat(context).doesNotHaveBean(CoordLeaderInitiator.class);
                    client.set(context.getBean(CuratorFramework.class));
                    assertThat(client.get().getState()).isEqualTo(CuratorFrameworkState.STARTED);
                    assertThat(client.get().getNamespace()).isEqualTo("app");
                    assertThat(client.get().getZookeeperClient().getConnectionTimeoutMs())
                            .as("unset: 15 s, or the session timeout if that is shorter")
                            .isEqualTo(4_000);
                    CoordLockRegistry registry = context.getBean(CoordLockRegistry.class);
                    assertThat(registry.root()).isEqualTo("/app-locks");
                    registry.executeLocked("job", () -> {});
                });
        assertThat(client.get().getState()).isEqualTo(CuratorFrameworkState.STOPPED);
    }

    @Test
    void withoutAConnectStringOrAClientNothingIsConfigured() {
        runner.run(context -> {
            assertThat(context).doesNotHaveBean(CuratorFramework.class);
            assertThat(context).doesNotHaveBean(LockRegistry.class);
            assertThat(context).doesNotHaveBean(CoordLeaderInitiator.class);
        });
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnClient {
        @Bean
        CuratorFramework ownClient() throws InterruptedException {
            return zk.newClient();
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnRegistry {
        @Bean
        LockRegistry ownRegistry() {
            return new DefaultLockRegistry();
        }
    }

    @Test
    void aConnectStringZooKeeperAcceptsIsAcceptedTooWithEmptyEntriesSpacesAndDefaultPorts() {
        String sloppy = " " + zk.connectString().replace(",", " ,, ") + ",";
        runner.withPropertyValues("coord.zookeeper.connect-string=" + sloppy).run(context -> {
            assertThat(context).hasNotFailed();
            context.getBean(CoordLockRegistry.class).executeLocked("job", () -> {});
        });
        // Checked only: the application's own client is the one used.
        runner.withUserConfiguration(OwnClient.class)
                .withPropertyValues("coord.zookeeper.connect-string=zk1:,fe80::1:2181,[::1],[::1]:2182/app")
                .run(context -> assertThat(context).hasNotFailed());
    }

    @Test
    void theApplicationsOwnClientIsUsedAndItsOwnRegistryWins() {
        runner.withUserConfiguration(OwnClient.class)
                .withPropertyValues("coord.zookeeper.connect-string=elsewhere:2181")
                .run(context -> {
                    assertThat(context).hasSingleBean(CuratorFramework.class);
                    assertThat(context).hasBean("ownClient");
                    assertThat(context).hasSingleBean(CoordLockRegistry.class);
                });
        runner.withUserConfiguration(OwnClient.class, OwnRegistry.class).run(context -> {
            assertThat(context).hasSingleBean(LockRegistry.class);
            assertThat(context).doesNotHaveBean(CoordLockRegistry.class);
        });
    }

    @Configuration(proxyBeanMethods = false)
    static class SecondClient {
        @Bean
        CuratorFramework secondClient() throws InterruptedException {
            return zk.newClient();
        }
    }

    @Test
    void twoClientsWithoutAPrimaryOneLeaveTheRegistryToTheApplicationAndFailARole() {
        runner.withUserConfiguration(OwnClient.class, SecondClient.class).run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context).doesNotHaveBean(CoordLockRegistry.class);
        });
        runner.withUserConfiguration(OwnClient.class, SecondClient.class)
                .withPropertyValues("coord.leader.role=billing")
                .run(context -> assertThat(context)
                        .hasFailed()
                        .getFailure()
                        .hasRootCauseInstanceOf(NoUniqueBeanDefinitionException.class));
    }

    @Test
    void aLeaderRoleWithNoClientToElectItOnFailsTheContextSayingWhy() {
        runner.withPropertyValues("coord.leader.role=billing")
                .run(context -> assertThat(context)
                        .hasFailed()
                        .getFailure()
                        .rootCause()
                        .isInstanceOf(IllegalStateException.class)
                        .hasMessage("coord.leader.role is set (billing), but there is no ZooKeeper client to elect it"
                                + " on: set coord.zookeeper.connect-string, or define a CuratorFramework bean"));
    }

    @Test
    void aLeaderRoleWithNoClientFailsTheContextEvenWhenEveryBeanIsLazy() {
        runner.withPropertyValues("coord.leader.role=billing")
                .withInitializer(context ->
                        context.addBeanFactoryPostProcessor(new LazyInitializationBeanFactoryPostProcessor()))
                .run(context -> assertThat(context)
                        .hasFailed()
                        .getFailure()
                        .rootCause()
                        .hasMessageStartingWith(
                                "coord.leader.role is set (billing), but there is no ZooKeeper client"));
    }

    @Test
    void aLeaderRoleWithoutSpringIntegrationFailsTheContextSayingWhy() {
        runner.withClassLoader(new FilteredClassLoader("org.springframework.integration"))
                .withPropertyValues("coord.zookeeper.connect-string=" + zk.connectString(), "coord.leader.role=billing")
                .run(context -> assertThat(context)
                        .hasFailed()
                        .getFailure()
                        .rootCause()
                        .isInstanceOf(IllegalStateException.class)
                        .hasMessage("coord.leader.role is set (billing), but its leader initiator needs Spring"
                                + " Integration (spring-integration-core) on the class path"));
    }

    @Test
    void withoutSpringIntegrationOnlyTheClientIsConfigured() {
        runner.withClassLoader(new FilteredClassLoader("org.springframework.integration"))
                .withPropertyValues("coord.zookeeper.connect-string=" + zk.connectString())
                .run(context -> {
                    assertThat(context).hasSingleBean(CuratorFramework.class);
                    assertThat(context).doesNotHaveBean(CoordLockRegistry.class);
                });
    }

    @Configuration(proxyBeanMethods = false)
    static class LeaderEvents {
        final List<AbstractLeaderEvent> events = new CopyOnWriteArrayList<>();

        @Bean
        ApplicationListener<AbstractLeaderEvent> leaderEvents() {
            return events::add;
        }
    }

    @Test
    void aRoleGivesAnInitiatorThatStartsWithTheContextAndPublishesItsEvents() {
        runner.withUserConfiguration(LeaderEvents.class)
                .withPropertyValues(
                        "coord.zookeeper.connect-string=" + zk.connectString(),
                        "coord.leader.role=reports",
                        "coord.leader.id=node-1",
                        "coord.leader.root=/elections")
                .run(context -> {
                    CoordLeaderInitiator initiator = context.getBean(CoordLeaderInitiator.class);
                    assertThat(initiator.path()).isEqualTo("/elections/reports");
                    assertThat(initiator.isRunning()).isTrue();
                    assertThat(initiator.getPhase()).isEqualTo(Integer.MAX_VALUE - 1000);
                    LeaderEvents events = context.getBean(LeaderEvents.class);
                    await().until(() -> !events.events.isEmpty());
                    assertThat(events.events.get(0)).isInstanceOf(OnGrantedEvent.class);
                    assertThat(events.events.get(0).getRole()).isEqualTo("reports");
                });
        runner.withPropertyValues(
                        "coord.zookeeper.connect-string=" + zk.connectString(),
                        "coord.leader.role=reports",
                        "coord.leader.auto-startup=false")
                .run(context -> assertThat(
                                context.getBean(CoordLeaderInitiator.class).isRunning())
                        .isFalse());
    }

    @Test
    void theDefaultRootsAreSpringIntegrationsSoThatAFleetMovesAcrossOnTheSameZnodes() {
        runner.withPropertyValues(
                        "coord.zookeeper.connect-string=" + zk.connectString(),
                        "coord.leader.role=reports",
                        "coord.leader.auto-startup=false")
                .run(context -> {
                    assertThat(context.getBean(CoordLockRegistry.class).root())
                            .isEqualTo("/SpringIntegration-LockRegistry");
                    assertThat(context.getBean(CoordLeaderInitiator.class).path())
                            .isEqualTo("/spring-integration/leader/reports");
                });
    }

    @Test
    void aLeaderRootEndingInASlashOrTheTopIsTakenAsTheInitiatorTakesIt() {
        for (String[] rootAndPath : new String[][] {{"/elections/", "/elections/reports"}, {"/", "/reports"}}) {
            runner.withPropertyValues(
                            "coord.zookeeper.connect-string=" + zk.connectString(),
                            "coord.leader.role=reports",
                            "coord.leader.auto-startup=false",
                            "coord.leader.root=" + rootAndPath[0])
                    .run(context -> assertThat(
                                    context.getBean(CoordLeaderInitiator.class).path())
                            .isEqualTo(rootAndPath[1]));
        }
    }

    @Test
    void anUnsetConnectionTimeoutIsFifteenSecondsUnderALongerSession() {
        runner.withPropertyValues("coord.zookeeper.connect-string=" + zk.connectString())
                .run(context -> {
                    CuratorFramework client = context.getBean(CuratorFramework.class);
                    assertThat(client.getZookeeperClient().getConnectionTimeoutMs())
                            .isEqualTo(15_000);
                    assertThat(context.getBean(CoordProperties.class)
                                    .getZookeeper()
                                    .getSessionTimeout())
                            .isEqualTo(Duration.ofSeconds(30));
                });
    }

    @Test
    void badPropertiesFailTheContextWithTheirName() {
        String ensemble = "coord.zookeeper.connect-string=" + zk.connectString();
        String millis = " must be at least 1ms (Curator counts in whole milliseconds) and at most PT596H31M23.647S: ";
        assertFailsWith(
                "coord.zookeeper.session-timeout" + millis + "PT0S", ensemble, "coord.zookeeper.session-timeout=0s");
        assertFailsWith(
                "coord.zookeeper.session-timeout" + millis + "PT0.0005S",
                ensemble,
                "coord.zookeeper.session-timeout=500us");
        assertFailsWith(
                "coord.zookeeper.base-sleep" + millis + "PT2400000H", ensemble, "coord.zookeeper.base-sleep=100000d");
        assertFailsWith(
                "coord.zookeeper.connection-timeout (PT20S) must not be longer than coord.zookeeper.session-timeout"
                        + " (PT10S)",
                ensemble,
                "coord.zookeeper.session-timeout=10s",
                "coord.zookeeper.connection-timeout=20s");
        assertFailsWith(
                "coord.zookeeper.max-retries must be from 0 to 29 (Curator's exponential backoff allows no more): -1",
                ensemble,
                "coord.zookeeper.max-retries=-1");
        assertFailsWith(
                "coord.zookeeper.max-retries must be from 0 to 29 (Curator's exponential backoff allows no more): 30",
                ensemble,
                "coord.zookeeper.max-retries=30");
        assertFailsWith(
                "coord.zookeeper.base-sleep (PT10S) must not be longer than coord.zookeeper.max-sleep (PT5S)",
                ensemble,
                "coord.zookeeper.base-sleep=10s");
        assertFailsWith(
                "coord.zookeeper.connect-string: '' names no server; give host:port[,host:port...]",
                "coord.zookeeper.connect-string=");
        assertFailsWith(
                "coord.zookeeper.connect-string: the port of 'zk1:notaport' in 'zk1:notaport' is not a number from 1"
                        + " to 65535",
                "coord.zookeeper.connect-string=zk1:notaport");
        assertFailsWith(
                "coord.zookeeper.connect-string: the port of 'zk2:65536' in 'zk1:2181,zk2:65536' is not a number from"
                        + " 1 to 65535",
                "coord.zookeeper.connect-string=zk1:2181,zk2:65536");
        assertFailsWith(
                "coord.zookeeper.connect-string: 'zk1:2181,:2181' has a server without a host: ':2181'; give"
                        + " host:port[,host:port...]",
                "coord.zookeeper.connect-string=zk1:2181,:2181");
        assertFailsWith(
                "coord.zookeeper.connect-string: ', ,' names no server; give host:port[,host:port...]",
                "coord.zookeeper.connect-string=, ,");
        assertFailsWith(
                "coord.zookeeper.connect-string: '[::1:2181' in '[::1:2181' is not [address]:port",
                "coord.zookeeper.connect-string=[::1:2181");
        assertFailsWith(
                "coord.zookeeper.connect-string: '[::1]:' in 'zk1:2181,[::1]:' is not [address]:port",
                "coord.zookeeper.connect-string=zk1:2181,[::1]:");
        assertFailsWith(
                "coord.zookeeper.connect-string: chroot '/app/' of 'zk1:2181/app/' is not a valid path: Path must not"
                        + " end with / character",
                "coord.zookeeper.connect-string=zk1:2181/app/");
        assertFailsWith(
                "coord.zookeeper.namespace: '/app' must not start with /: it is a path without its leading slash",
                ensemble,
                "coord.zookeeper.namespace=/app");
        assertFailsWith(
                "coord.lock.root: invalid ZooKeeper path \"locks\": Path must start with / character",
                ensemble,
                "coord.lock.root=locks");
        assertFailsWith(
                "coord.leader.root: invalid ZooKeeper path \"leaders\": Path must start with / character",
                ensemble,
                "coord.leader.role=reports",
                "coord.leader.root=leaders");
        assertFailsWith(
                "coord.leader.root: invalid ZooKeeper path \"//\": Path must not end with / character",
                ensemble,
                "coord.leader.role=reports",
                "coord.leader.root=//");
        assertFailsWith(
                "coord.leader.role: 'x/y' is not a valid znode name: it must be non-empty, not . or .., and contain"
                        + " no /",
                ensemble,
                "coord.leader.role=x/y");
        assertFailsWith(
                "coord.leader.role: '' is not a valid znode name: it must be non-empty, not . or .., and contain no /",
                ensemble,
                "coord.leader.role=");
        assertFailsWith(
                "coord.leader.id must not be empty; leave it unset for pid@host",
                ensemble,
                "coord.leader.role=reports",
                "coord.leader.id=");
    }

    /** The context fails, and the first IllegalArgumentException on the way down names the property. */
    private void assertFailsWith(String message, String... properties) {
        runner.withPropertyValues(properties).run(context -> {
            Throwable failure = context.getStartupFailure();
            assertThat(failure).as("the context failed").isNotNull();
            while (!(failure instanceof IllegalArgumentException) && failure.getCause() != null) {
                failure = failure.getCause();
            }
            assertThat(failure).isInstanceOf(IllegalArgumentException.class).hasMessage(message);
        });
    }

    @Test
    void anyRoleIsARoleEvenOneNamedFalse() {
        runner.withPropertyValues(
                        "coord.zookeeper.connect-string=" + zk.connectString(),
                        "coord.leader.role=false",
                        "coord.leader.auto-startup=false")
                .run(context -> assertThat(
                                context.getBean(CoordLeaderInitiator.class).path())
                        .isEqualTo("/spring-integration/leader/false"));
    }

    @Test
    void propertiesAreDescribedForIdes() throws Exception {
        try (InputStream in = getClass().getResourceAsStream("/META-INF/spring-configuration-metadata.json")) {
            assertThat(in).isNotNull();
            String metadata = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            assertThat(metadata)
                    .contains(
                            "\"coord.zookeeper.connect-string\"",
                            "\"coord.zookeeper.session-timeout\"",
                            "\"coord.zookeeper.namespace\"",
                            "\"coord.zookeeper.max-retries\"",
                            "\"coord.lock.root\"",
                            "\"coord.leader.role\"",
                            "\"coord.leader.auto-startup\"");
        }
    }
}
