package io.coord.spring;

import io.coord.core.internal.Arguments;
import io.coord.mutex.ReentrantMutex;
import org.apache.curator.framework.CuratorFramework;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.Conditional;
import org.springframework.core.type.AnnotatedTypeMetadata;
import org.springframework.integration.leader.DefaultCandidate;
import org.springframework.integration.support.locks.LockRegistry;

/**
 * Spring Integration on coord, for an application with a {@link CuratorFramework} bean (its own, or the one from
 * {@code coord.zookeeper.*}): a {@link CoordLockRegistry} under {@code coord.lock.root}, and, when {@code
 * coord.leader.role} is set, a {@link CoordLeaderInitiator} for that role. Each backs off when the application
 * defines its own. With several clients and none {@code @Primary}, the registry backs off (which ensemble the locks
 * live on is the application's to say), and a role set with {@code coord.leader.role} fails the context, since the
 * role would otherwise go unelected without a word.
 */
@AutoConfiguration(
        after = CoordZooKeeperAutoConfiguration.class,
        // spring-cloud-zookeeper's client, when it is there, is the application's client.
        afterName = "org.springframework.cloud.zookeeper.ZookeeperAutoConfiguration")
@ConditionalOnClass({LockRegistry.class, ReentrantMutex.class})
@ConditionalOnBean(CuratorFramework.class)
@EnableConfigurationProperties(CoordProperties.class)
public class CoordIntegrationAutoConfiguration {
    @Bean
    @ConditionalOnMissingBean(LockRegistry.class)
    @ConditionalOnSingleCandidate(CuratorFramework.class)
    public CoordLockRegistry coordLockRegistry(CuratorFramework client, CoordProperties properties) {
        return new CoordLockRegistry(client, properties.getLock().getRoot());
    }

    @Bean
    @ConditionalOnMissingBean
    @Conditional(OnLeaderRole.class)
    public CoordLeaderInitiator coordLeaderInitiator(CuratorFramework client, CoordProperties properties) {
        CoordProperties.Leader leader = properties.getLeader();
        String id = leader.getId() != null ? leader.getId() : Arguments.defaultParticipantId();
        CoordLeaderInitiator initiator =
                new CoordLeaderInitiator(client, new DefaultCandidate(id, leader.getRole()), leader.getRoot());
        initiator.setAutoStartup(leader.isAutoStartup());
        initiator.setPhase(leader.getPhase());
        return initiator;
    }

    /**
     * Whether {@code coord.leader.role} is set, to any value: {@code @ConditionalOnProperty} would take a role named
     * "false" for "no role", and an empty one must reach the property checks to fail there.
     */
    static final class OnLeaderRole extends SpringBootCondition {
        @Override
        public ConditionOutcome getMatchOutcome(ConditionContext context, AnnotatedTypeMetadata metadata) {
            return context.getEnvironment().containsProperty("coord.leader.role")
                    ? ConditionOutcome.match("coord.leader.role is set")
                    : ConditionOutcome.noMatch("coord.leader.role is not set");
        }
    }
}
