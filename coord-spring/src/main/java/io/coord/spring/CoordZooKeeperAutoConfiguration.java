package io.coord.spring;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;

/**
 * A started {@link CuratorFramework} from {@code coord.zookeeper.*}, closed when the context closes, unless the
 * application defines its own.
 */
// spring-cloud-zookeeper's client, when it is there, is the application's client: this one backs off.
@AutoConfiguration(afterName = "org.springframework.cloud.zookeeper.ZookeeperAutoConfiguration")
@ConditionalOnClass(CuratorFramework.class)
@EnableConfigurationProperties(CoordProperties.class)
public class CoordZooKeeperAutoConfiguration {
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    @ConditionalOnProperty("coord.zookeeper.connect-string")
    public CuratorFramework coordCuratorFramework(CoordProperties properties) {
        CoordProperties.ZooKeeper zk = properties.getZookeeper(); // checked when bound: see PropertyChecks
        int sessionTimeout = PropertyChecks.millis("coord.zookeeper.session-timeout", zk.getSessionTimeout());
        int connectionTimeout = PropertyChecks.millis("coord.zookeeper.connection-timeout", zk.getConnectionTimeout());
        int baseSleep = PropertyChecks.millis("coord.zookeeper.base-sleep", zk.getBaseSleep());
        int maxSleep = PropertyChecks.millis("coord.zookeeper.max-sleep", zk.getMaxSleep());
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(zk.getConnectString())
                .sessionTimeoutMs(sessionTimeout)
                .connectionTimeoutMs(connectionTimeout)
                .namespace(zk.getNamespace())
                .retryPolicy(new ExponentialBackoffRetry(baseSleep, zk.getMaxRetries(), maxSleep))
                .build();
        client.start();
        return client;
    }
}
