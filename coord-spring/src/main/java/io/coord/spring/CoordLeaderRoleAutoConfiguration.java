package io.coord.spring;

import org.apache.curator.framework.CuratorFramework;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingClass;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Lazy;
import org.springframework.core.env.Environment;

/**
 * Fails the context when {@code coord.leader.role} is set but no {@link CoordLeaderInitiator} can be made for it,
 * since the role would otherwise go unelected without a word: there is no {@link CuratorFramework} bean to elect on
 * (no {@code coord.zookeeper.connect-string}, and none of the application's), or Spring Integration is not on the
 * class path.
 */
@AutoConfiguration(after = {CoordZooKeeperAutoConfiguration.class, CoordIntegrationAutoConfiguration.class})
@Conditional(CoordIntegrationAutoConfiguration.OnLeaderRole.class)
public class CoordLeaderRoleAutoConfiguration {
    private static final String ROLE = "coord.leader.role";

    @Bean
    @Lazy(false) // nothing asks for it, so under lazy initialization it would never be made, nor fail
    @ConditionalOnMissingBean(CuratorFramework.class)
    public Object coordLeaderRoleWithoutClient(Environment environment) {
        throw new IllegalStateException(ROLE + " is set (" + environment.getProperty(ROLE) + "), but there is no"
                + " ZooKeeper client to elect it on: set coord.zookeeper.connect-string, or define a CuratorFramework"
                + " bean");
    }

    @Bean
    @Lazy(false)
    @ConditionalOnMissingClass("org.springframework.integration.support.locks.LockRegistry")
    public Object coordLeaderRoleWithoutSpringIntegration(Environment environment) {
        throw new IllegalStateException(ROLE + " is set (" + environment.getProperty(ROLE) + "), but its leader"
                + " initiator needs Spring Integration (spring-integration-core) on the class path");
    }
}
