package io.coord.core;

import java.util.Comparator;
import java.util.Objects;
import java.util.Optional;

/**
 * A child znode created in sequential mode, such as {@code _c_<uuid>-lock-0000000042}.
 *
 * @param name the full child name
 * @param prefix the name without its protection marker ({@code _c_<uuid>-}) and without the sequence suffix, for
 *     example {@code lock-}
 * @param sequence the 10-digit suffix ZooKeeper appended
 */
public record SequenceNode(String name, String prefix, long sequence) implements Comparable<SequenceNode> {
    private static final int SEQUENCE_DIGITS = 10;
    private static final String PROTECTION_MARKER = "_c_";
    private static final int UUID_LENGTH = 36;
    private static final Comparator<SequenceNode> ORDER =
            Comparator.comparingLong(SequenceNode::sequence).thenComparing(SequenceNode::name);

    public SequenceNode {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(prefix, "prefix");
    }

    /** Parses a child name; empty for names that do not end in a 10-digit sequence suffix. */
    public static Optional<SequenceNode> parse(String childName) {
        Objects.requireNonNull(childName, "childName");
        int split = childName.length() - SEQUENCE_DIGITS;
        if (split < 0) {
            return Optional.empty();
        }
        for (int i = split; i < childName.length(); i++) {
            char c = childName.charAt(i);
            if (c < '0' || c > '9') {
                return Optional.empty();
            }
        }
        long sequence = Long.parseLong(childName.substring(split));
        String head = childName.substring(0, split);
        return Optional.of(new SequenceNode(childName, stripProtection(head), sequence));
    }

    /** The protection id ({@code <uuid>} in {@code _c_<uuid>-...}), or empty for unprotected names. */
    public Optional<String> protectionId() {
        return isProtected(name)
                ? Optional.of(name.substring(PROTECTION_MARKER.length(), markerEnd() - 1))
                : Optional.empty();
    }

    @Override
    public int compareTo(SequenceNode other) {
        return ORDER.compare(this, other);
    }

    private static int markerEnd() {
        return PROTECTION_MARKER.length() + UUID_LENGTH + 1;
    }

    private static boolean isProtected(String name) {
        return name.startsWith(PROTECTION_MARKER)
                && name.length() >= markerEnd()
                && name.charAt(markerEnd() - 1) == '-';
    }

    private static String stripProtection(String head) {
        return isProtected(head) ? head.substring(markerEnd()) : head;
    }
}
