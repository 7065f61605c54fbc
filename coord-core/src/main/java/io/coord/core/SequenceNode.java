package io.coord.core;

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
        long sequence = 0;
        for (int i = split; i < childName.length(); i++) {
            char c = childName.charAt(i);
            if (c < '0' || c > '9') {
                return Optional.empty();
            }
            sequence = sequence * 10 + (c - '0');
        }
        // Ten digits always fit a long.
        int prefixStart = split >= markerEnd() && isProtected(childName) ? markerEnd() : 0;
        return Optional.of(new SequenceNode(childName, childName.substring(prefixStart, split), sequence));
    }

    /** The protection id ({@code <uuid>} in {@code _c_<uuid>-...}), or empty for unprotected names. */
    public Optional<String> protectionId() {
        return isProtected(name)
                ? Optional.of(name.substring(PROTECTION_MARKER.length(), markerEnd() - 1))
                : Optional.empty();
    }

    @Override
    public int compareTo(SequenceNode other) {
        int bySequence = Long.compare(sequence, other.sequence);
        return bySequence != 0 ? bySequence : name.compareTo(other.name);
    }

    private static int markerEnd() {
        return PROTECTION_MARKER.length() + UUID_LENGTH + 1;
    }

    private static boolean isProtected(String name) {
        return name.startsWith(PROTECTION_MARKER)
                && name.length() >= markerEnd()
                && name.charAt(markerEnd() - 1) == '-';
    }
}
