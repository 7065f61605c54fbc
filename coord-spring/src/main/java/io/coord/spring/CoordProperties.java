package io.coord.spring;

import java.time.Duration;
import org.springframework.beans.factory.InitializingBean;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code coord.*} properties of coord's Spring Boot auto-configuration. They are checked once bound, before
 * anything is built from them: a bad value fails the context with a message that starts with the property's name.
 */
@ConfigurationProperties("coord")
public class CoordProperties implements InitializingBean {
    private final ZooKeeper zookeeper = new ZooKeeper();
    private final LockRegistry lock = new LockRegistry();
    private final Leader leader = new Leader();

    public ZooKeeper getZookeeper() {
        return zookeeper;
    }

    public LockRegistry getLock() {
        return lock;
    }

    public Leader getLeader() {
        return leader;
    }

    /** Checks every property; called by Spring once they are bound. */
    @Override
    public void afterPropertiesSet() {
        PropertyChecks.check(this);
    }

    /** The CuratorFramework coord builds when the application defines none. */
    public static class ZooKeeper {
        private static final Duration DEFAULT_CONNECTION_TIMEOUT = Duration.ofSeconds(15);

        /** The ensemble, host:port[,host:port...]; without it, no CuratorFramework is configured. */
        private String connectString;

        /** The session timeout; the servers grant between 2 and 20 of their ticks. */
        private Duration sessionTimeout = Duration.ofSeconds(30);

        /**
         * How long to wait for a connection before a request fails over to the retry policy; at most the session
         * timeout. Unset, the smaller of 15 s and the session timeout.
         */
        private Duration connectionTimeout;

        /** A path prefix for everything the client does, without the leading slash (Curator's namespace). */
        private String namespace;

        /** Retries of an operation that failed on a lost connection, with exponential backoff: 0 to 29. */
        private int maxRetries = 5;

        /**
         * The unit of the backoff between retries: retry n (from 0) sleeps this times a random number from 1 to
         * 2^(n+1) - 1, at most max-sleep.
         */
        private Duration baseSleep = Duration.ofMillis(100);

        /** The longest backoff between retries. */
        private Duration maxSleep = Duration.ofSeconds(5);

        public String getConnectString() {
            return connectString;
        }

        public void setConnectString(String connectString) {
            this.connectString = connectString;
        }

        public Duration getSessionTimeout() {
            return sessionTimeout;
        }

        public void setSessionTimeout(Duration sessionTimeout) {
            this.sessionTimeout = sessionTimeout;
        }

        /** The connection timeout set, or else the smaller of 15 s and the session timeout. */
        public Duration getConnectionTimeout() {
            if (connectionTimeout != null) {
                return connectionTimeout;
            }
            return sessionTimeout == null || sessionTimeout.compareTo(DEFAULT_CONNECTION_TIMEOUT) > 0
                    ? DEFAULT_CONNECTION_TIMEOUT
                    : sessionTimeout;
        }

        public void setConnectionTimeout(Duration connectionTimeout) {
            this.connectionTimeout = connectionTimeout;
        }

        public String getNamespace() {
            return namespace;
        }

        public void setNamespace(String namespace) {
            this.namespace = namespace;
        }

        public int getMaxRetries() {
            return maxRetries;
        }

        public void setMaxRetries(int maxRetries) {
            this.maxRetries = maxRetries;
        }

        public Duration getBaseSleep() {
            return baseSleep;
        }

        public void setBaseSleep(Duration baseSleep) {
            this.baseSleep = baseSleep;
        }

        public Duration getMaxSleep() {
            return maxSleep;
        }

        public void setMaxSleep(Duration maxSleep) {
            this.maxSleep = maxSleep;
        }
    }

    /** The CoordLockRegistry bean. */
    public static class LockRegistry {
        /**
         * The path the locks live under, one child per lock key. The default is spring-integration-zookeeper's, whose
         * locks have the same layout, so that a fleet moving from its registry to coord's locks the same znodes.
         */
        private String root = "/SpringIntegration-LockRegistry";

        public String getRoot() {
            return root;
        }

        public void setRoot(String root) {
            this.root = root;
        }
    }

    /** A CoordLeaderInitiator bean, configured when a role is set. */
    public static class Leader {
        /** The role to lead; the election takes place at root/role. Without it, no initiator is configured. */
        private String role;

        /** This candidate's id, shown to the other participants; pid@host by default. */
        private String id;

        /** The path the elections live under; spring-integration-zookeeper's LeaderInitiator uses the same. */
        private String root = "/spring-integration/leader";

        /** Whether the initiator joins the election when the application context starts. */
        private boolean autoStartup = true;

        /**
         * The lifecycle phase in which the initiator starts, late by default, and stops, early: that of
         * spring-integration-zookeeper's LeaderInitiator.
         */
        private int phase = CoordLeaderInitiator.DEFAULT_PHASE;

        public String getRole() {
            return role;
        }

        public void setRole(String role) {
            this.role = role;
        }

        public String getId() {
            return id;
        }

        public void setId(String id) {
            this.id = id;
        }

        public String getRoot() {
            return root;
        }

        public void setRoot(String root) {
            this.root = root;
        }

        public boolean isAutoStartup() {
            return autoStartup;
        }

        public void setAutoStartup(boolean autoStartup) {
            this.autoStartup = autoStartup;
        }

        public int getPhase() {
            return phase;
        }

        public void setPhase(int phase) {
            this.phase = phase;
        }
    }
}
