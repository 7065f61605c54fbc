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
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    @ConditionalOnProperty("coord.zookeeper.connect-string")
    public CuratorFramework coordCuratorFramework(CoordProperties properties) {
        CoordProperties.ZooKeeper zk = properties.getZookeeper();
        requirePositive("coord.zookeeper.session-timeout", zk.getSessionTimeout());
        requirePositive("coord.zookeeper.connection-timeout", zk.getConnectionTimeout());
        requirePositive("coord.zookeeper.base-sleep", zk.getBaseSleep());
        requirePositive("coord.zookeeper.max-sleep", zk.getMaxSleep());
        if (zk.getMaxRetries() < 0) {
            throw new IllegalArgumentException(
                    "coord.zookeeper.max-retries must not be negative: " + zk.getMaxRetries());
        }
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(zk.getConnectString())
                .sessionTimeoutMs(Math.toIntExact(zk.getSessionTimeout().toMillis()))
                .connectionTimeoutMs(Math.toIntExact(zk.getConnectionTimeout().toMillis()))
                .namespace(zk.getNamespace())
                .retryPolicy(new ExponentialBackoffRetry(
                        Math.toIntExact(zk.getBaseSleep().toMillis()),
                        zk.getMaxRetries(),
                        Math.toIntExact(zk.getMaxSleep().toMillis())))
                .build();
        client.start();
        return client;
    }

    private static void requirePositive(String property, Duration value) {
        if (value == null || value.isZero() || value.isNegative()) {
            throw new IllegalArgumentException(property + " must be positive: " + value);
        }
    }
}
