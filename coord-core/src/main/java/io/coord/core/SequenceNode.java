package io.coord.core;

import java.util.Objects;
import java.util.Optional;

/**
 * A child znode created in sequential mode, such as {@code _c_<uuid>-lock-0000000042}.
 *
 * <p>ZooKeeper numbers a parent's sequential children with its count of the creates under it, a signed 32-bit
 * number. The count ends at 2,147,483,647: every later child is numbered that again, except that creates in flight
 * together at the end are numbered on past it, into the negative numbers ({@code lock--2147483648}, then up to
 * {@code lock--000000001}). A parent that is never deleted, such as a busy semaphore's or queue's, gets there after
 * about two billion creates. {@link #parse} reads the negative suffixes after any prefix: coord's end in {@code -}, but
 * Curator's read/write lock's ({@code __READ__}, {@code __WRIT__}) do not. {@link #compareTo} orders them after the
 * numbers before the end. coord queues no node of its own numbered at the end: the lock refuses the acquisition, and
 * says why.
 *
 * @param name the full child name
 * @param prefix the name without its protection marker ({@code _c_<uuid>-}) and without the sequence suffix, for
 *     example {@code lock-}
 * @param sequence the counter ZooKeeper appended, from {@code -2147483648} to {@code 2147483647}
 */
public record SequenceNode(String name, String prefix, long sequence) implements Comparable<SequenceNode> {
    private static final int SEQUENCE_DIGITS = 10;
    private static final long MIN_TEN_DIGITS = 1_000_000_000L;
    private static final long UNSIGNED = 0xFFFF_FFFFL;
    private static final String PROTECTION_MARKER = "_c_";
    private static final int UUID_LENGTH = 36;

    public SequenceNode {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(prefix, "prefix");
    }

    /**
     * Parses a child name; empty for names that do not end in a suffix ZooKeeper appends: ten digits, or after the
     * counter wrapped, a minus sign and nine or ten digits.
     */
    public static Optional<SequenceNode> parse(String childName) {
        Objects.requireNonNull(childName, "childName");
        int split = childName.length() - SEQUENCE_DIGITS;
        if (split < 0) {
            return Optional.empty();
        }
        boolean negative = childName.charAt(split) == '-';
        long magnitude = 0;
        for (int i = negative ? split + 1 : split; i < childName.length(); i++) {
            char c = childName.charAt(i);
            if (c < '0' || c > '9') {
                return Optional.empty();
            }
            magnitude = magnitude * 10 + (c - '0'); // ten digits always fit a long
        }
        boolean signBefore = split > 0 && childName.charAt(split - 1) == '-';
        if (negative) {
            if (magnitude == 0) {
                return Optional.empty(); // "-000000000": ZooKeeper writes 0 without a sign
            }
        } else if (magnitude > Integer.MAX_VALUE
                || (magnitude >= MIN_TEN_DIGITS && signBefore && split > 1 && childName.charAt(split - 2) == '-')) {
            // Ten digits past the counter's range, or after a doubled dash: a counter below -999999999, its sign
            // written before the ten digits. A prefix ending in "-" followed by a positive number has one dash.
            if (!signBefore || magnitude > -(long) Integer.MIN_VALUE) {
                return Optional.empty();
            }
            negative = true;
            split--;
        }
        long sequence = negative ? -magnitude : magnitude;
        int prefixStart = split >= markerEnd() && isProtected(childName) ? markerEnd() : 0;
        return Optional.of(new SequenceNode(childName, childName.substring(prefixStart, split), sequence));
    }

    /** The protection id ({@code <uuid>} in {@code _c_<uuid>-...}), or empty for unprotected names. */
    public Optional<String> protectionId() {
        return isProtected(name)
                ? Optional.of(name.substring(PROTECTION_MARKER.length(), markerEnd() - 1))
                : Optional.empty();
    }

    /**
     * Orders by sequence, then by name. Sequences compare as the unsigned 32-bit numbers ZooKeeper counted, so that the
     * negative numbers given past the counter's end come after 2147483647.
     */
    @Override
    public int compareTo(SequenceNode other) {
        int bySequence = Long.compare(sequence & UNSIGNED, other.sequence & UNSIGNED);
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
