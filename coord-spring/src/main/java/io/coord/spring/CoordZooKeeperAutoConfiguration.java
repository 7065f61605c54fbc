package io.coord.spring;

import java.time.Duration;
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
@AutoConfiguration
@ConditionalOnClass(CuratorFramework.class)
@EnableConfigurationProperties(CoordProperties.class)
public class CoordZooKeeperAutoConfiguration {
    private static final Duration MAX_MILLIS = Duration.ofMillis(Integer.MAX_VALUE);

    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    @ConditionalOnProperty("coord.zookeeper.connect-string")
    public CuratorFramework coordCuratorFramework(CoordProperties properties) {
        CoordProperties.ZooKeeper zk = properties.getZookeeper();
        int sessionTimeout = millis("coord.zookeeper.session-timeout", zk.getSessionTimeout());
        int connectionTimeout = millis("coord.zookeeper.connection-timeout", zk.getConnectionTimeout());
        int baseSleep = millis("coord.zookeeper.base-sleep", zk.getBaseSleep());
        int maxSleep = millis("coord.zookeeper.max-sleep", zk.getMaxSleep());
        if (zk.getMaxRetries() < 0) {
            throw new IllegalArgumentException(
                    "coord.zookeeper.max-retries must not be negative: " + zk.getMaxRetries());
        }
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

    /** Curator takes these as int milliseconds: a value must be positive and fit, or the context fails naming it. */
    private static int millis(String property, Duration value) {
        if (value == null || value.isZero() || value.isNegative() || value.compareTo(MAX_MILLIS) > 0) {
            throw new IllegalArgumentException(property + " must be positive and at most " + MAX_MILLIS + ": " + value);
        }
        return (int) value.toMillis(); // bounded above
    }
}
