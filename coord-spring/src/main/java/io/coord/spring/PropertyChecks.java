package io.coord.spring;

import io.coord.core.internal.Arguments;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import org.apache.zookeeper.common.PathUtils;

/**
 * The checks of every {@code coord.*} property, made when the properties are bound and before anything is built
 * from them: a bad value fails the context with a message that starts with the property's name.
 */
final class PropertyChecks {
    private static final Duration MAX_MILLIS = Duration.ofMillis(Integer.MAX_VALUE);
    private static final int MAX_RETRIES = 29;

    private PropertyChecks() {}

    static void check(CoordProperties properties) {
        CoordProperties.ZooKeeper zk = properties.getZookeeper();
        if (zk.getConnectString() != null) {
            connectString(zk.getConnectString());
        }
        millis("coord.zookeeper.session-timeout", zk.getSessionTimeout());
        millis("coord.zookeeper.connection-timeout", zk.getConnectionTimeout());
        millis("coord.zookeeper.base-sleep", zk.getBaseSleep());
        millis("coord.zookeeper.max-sleep", zk.getMaxSleep());
        if (zk.getConnectionTimeout().compareTo(zk.getSessionTimeout()) > 0) {
            // Curator would only log it; a call would then wait for a connection longer than the session can live.
            throw new IllegalArgumentException("coord.zookeeper.connection-timeout (" + zk.getConnectionTimeout()
                    + ") must not be longer than coord.zookeeper.session-timeout (" + zk.getSessionTimeout() + ")");
        }
        if (zk.getBaseSleep().compareTo(zk.getMaxSleep()) > 0) {
            throw new IllegalArgumentException("coord.zookeeper.base-sleep (" + zk.getBaseSleep()
                    + ") must not be longer than coord.zookeeper.max-sleep (" + zk.getMaxSleep() + ")");
        }
        if (zk.getMaxRetries() < 0 || zk.getMaxRetries() > MAX_RETRIES) {
            // Curator's exponential backoff would take a larger count as 29, saying so only in its log.
            throw new IllegalArgumentException("coord.zookeeper.max-retries must be from 0 to " + MAX_RETRIES
                    + " (Curator's exponential backoff allows no more): " + zk.getMaxRetries());
        }
        if (zk.getNamespace() != null) {
            namespace(zk.getNamespace());
        }
        path("coord.lock.root", properties.getLock().getRoot());
        CoordProperties.Leader leader = properties.getLeader();
        electionRoot(leader.getRoot());
        if (leader.getRole() != null) {
            role(leader.getRole());
        }
        if (leader.getId() != null) {
            id(leader.getId());
        }
    }

    /** Curator takes these as int milliseconds: a value must be positive and fit. */
    static int millis(String property, Duration value) {
        if (value == null || value.compareTo(Duration.ofMillis(1)) < 0 || value.compareTo(MAX_MILLIS) > 0) {
            throw new IllegalArgumentException(
                    property + " must be at least 1ms (Curator counts in whole milliseconds) and at most " + MAX_MILLIS
                            + ": " + value);
        }
        return (int) value.toMillis(); // bounded above
    }

    /**
     * ZooKeeper's form, {@code host[:port][,host[:port]...][/chroot]}, checked here because Curator only parses it on
     * its background thread, where a bad port is logged and the client never connects. What ZooKeeper's own parser
     * accepts passes: entries are trimmed and empty ones skipped, a port follows the last colon (so an IPv6 address
     * may go without brackets), and a missing port is 2181.
     */
    private static void connectString(String value) {
        String property = "coord.zookeeper.connect-string";
        int slash = value.indexOf('/');
        String hosts = slash < 0 ? value : value.substring(0, slash);
        if (slash >= 0) {
            String chroot = value.substring(slash);
            try {
                PathUtils.validatePath(chroot);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(
                        property + ": chroot '" + chroot + "' of '" + value + "' is not a valid path: "
                                + e.getMessage(),
                        e);
            }
        }
        List<String> entries = Arrays.stream(hosts.split(","))
                .map(String::trim)
                .filter(entry -> !entry.isEmpty())
                .toList();
        if (entries.isEmpty()) {
            throw new IllegalArgumentException(
                    property + ": '" + value + "' names no server; give host:port[,host:port...]");
        }
        for (String entry : entries) {
            server(property, value, entry);
        }
    }

    private static void server(String property, String value, String entry) {
        String host;
        String port = null;
        if (entry.startsWith("[")) { // [IPv6]:port
            int close = entry.indexOf(']');
            String rest = close < 0 ? null : entry.substring(close + 1);
            if (rest == null || !(rest.isEmpty() || (rest.startsWith(":") && rest.length() > 1))) {
                throw new IllegalArgumentException(
                        property + ": '" + entry + "' in '" + value + "' is not [address]:port");
            }
            host = entry.substring(1, close);
            port = rest.isEmpty() ? null : rest.substring(1);
        } else {
            int colon = entry.lastIndexOf(':');
            host = colon < 0 ? entry : entry.substring(0, colon);
            port = colon < 0 ? null : entry.substring(colon + 1);
        }
        if (host.isEmpty()) {
            throw new IllegalArgumentException(property + ": '" + value + "' has a server without a host: '" + entry
                    + "'; give host:port[,host:port...]");
        }
        if (port != null && !port.isEmpty() && !validPort(port)) {
            throw new IllegalArgumentException(
                    property + ": the port of '" + entry + "' in '" + value + "' is not a number from 1 to 65535");
        }
    }

    private static boolean validPort(String port) {
        if (port.isEmpty() || port.length() > 5 || !port.chars().allMatch(c -> c >= '0' && c <= '9')) {
            return false;
        }
        int number = Integer.parseInt(port);
        return number >= 1 && number <= 65535;
    }

    /** Curator's rule: a path without its leading slash. */
    private static void namespace(String value) {
        String property = "coord.zookeeper.namespace";
        if (value.startsWith("/")) {
            throw new IllegalArgumentException(
                    property + ": '" + value + "' must not start with /: it is a path without its leading slash");
        }
        try {
            PathUtils.validatePath("/" + value);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    property + ": '" + value + "' is not a valid path without its leading slash: " + e.getMessage(), e);
        }
    }

    private static void path(String property, String value) {
        try {
            Arguments.path(value);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(property + ": " + e.getMessage(), e);
        }
    }

    /**
     * The initiator takes a root that ends in {@code /}, as spring-integration-zookeeper's own default did, and
     * {@code /} itself for elections at the top, so the property does too.
     */
    private static void electionRoot(String root) {
        if (!"/".equals(root)) {
            boolean slashed = root != null && root.length() > 2 && root.endsWith("/"); // "//" is refused as it is
            path("coord.leader.root", slashed ? root.substring(0, root.length() - 1) : root);
        }
    }

    private static void role(String role) {
        String property = "coord.leader.role";
        if (role.isEmpty() || role.equals(".") || role.equals("..") || role.indexOf('/') >= 0) {
            throw new IllegalArgumentException(property + ": '" + role
                    + "' is not a valid znode name: it must be non-empty, not . or .., and contain no /");
        }
        try {
            PathUtils.validatePath("/" + role);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    property + ": '" + role + "' is not a valid znode name: " + e.getMessage(), e);
        }
    }

    private static void id(String id) {
        String property = "coord.leader.id";
        if (id.isEmpty()) {
            throw new IllegalArgumentException(property + " must not be empty; leave it unset for pid@host");
        }
        try {
            Arguments.participantId(id);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(property + ": " + e.getMessage(), e);
        }
    }
}
