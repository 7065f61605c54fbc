package io.coord.core.internal;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.common.PathUtils;

/** Argument checks shared by every primitive, with messages that carry the offending value. */
public final class Arguments {
    /** Largest participant id, in UTF-8 bytes; ids are node data and ride on every participants() reply. */
    static final int MAX_PARTICIPANT_ID_BYTES = 64 * 1024;

    private Arguments() {}

    public static CuratorFramework client(CuratorFramework client) {
        return Objects.requireNonNull(client, "client must not be null");
    }

    /** A ZooKeeper path as {@link PathUtils#validatePath} judges it, and not the root. */
    public static String path(String path) {
        if (path == null) {
            throw new IllegalArgumentException("path must not be null");
        }
        try {
            PathUtils.validatePath(path);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("invalid ZooKeeper path \"" + path + "\": " + e.getMessage(), e);
        }
        if (path.equals("/")) {
            throw new IllegalArgumentException("path must not be the root \"/\": coord keeps its nodes beneath it");
        }
        return path;
    }

    public static String participantId(String participantId) {
        Objects.requireNonNull(participantId, "participantId must not be null");
        int bytes = participantId.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > MAX_PARTICIPANT_ID_BYTES) {
            throw new IllegalArgumentException(
                    "participantId must be at most " + MAX_PARTICIPANT_ID_BYTES + " bytes in UTF-8: " + bytes);
        }
        return participantId;
    }

    public static Duration timeout(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout must not be null");
        if (timeout.isNegative()) {
            throw new IllegalArgumentException("timeout must not be negative: " + timeout);
        }
        return timeout;
    }

    /** The id used when none is given: {@code pid@host}, like a JVM's own name. */
    public static String defaultParticipantId() {
        return DefaultId.VALUE;
    }

    /** Resolved once, on first use: a host name lookup may touch DNS, and constructors must not do I/O each time. */
    private static final class DefaultId {
        static final String VALUE = ProcessHandle.current().pid() + "@" + hostName();

        private static String hostName() {
            try {
                return java.net.InetAddress.getLocalHost().getHostName();
            } catch (java.net.UnknownHostException e) {
                return "localhost";
            }
        }
    }
}
