package io.coord.queue;

/**
 * Where one item name stands in a client's {@link NameCache}, and the one table ({@link #on}) of what moves it.
 *
 * <pre>
 * OUT_OF_PLAY -- listed --&gt; CANDIDATE -- handed out --&gt; ATTEMPTING
 * ATTEMPTING -- first sighting of a claim --&gt; STEPPING_ASIDE -- attempt ended --&gt; DEFERRED
 * DEFERRED, STEPPING_ASIDE -- another attempt ended --&gt; CANDIDATE
 * ATTEMPTING -- watching the claim --&gt; ASKING -- attempt ended --&gt; CLAIMED_ELSEWHERE
 * ASKING -- the claim is ours, or absent --&gt; ATTEMPTING
 * CLAIMED_ELSEWHERE, ASKING -- claim deleted, or the watch died with the session --&gt; CANDIDATE
 * ATTEMPTING -- held --&gt; HELD_HERE -- acked --&gt; OUT_OF_PLAY
 * HELD_HERE, ATTEMPTING -- releasing --&gt; RELEASING -- released --&gt; CANDIDATE
 * </pre>
 *
 * HELD_HERE and RELEASING carry the session of the claim; events about a claim name its session, and a record of a
 * claim made on the current session is never replaced by news of another session's claim.
 */
enum NameState {
    /** In nobody's hands here and not a candidate: a children read that lists it brings it back. */
    OUT_OF_PLAY,
    /** In play: the next consumer to look may take it. */
    CANDIDATE,
    /** A local consumer is trying to claim it. */
    ATTEMPTING,
    /** An attempt found it claimed for the first time: once the attempt ends, it steps aside. */
    STEPPING_ASIDE,
    /** Stepped aside for one attempt on another name; comes back at the head after it. */
    DEFERRED,
    /** An attempt asks, with a watch, who holds its claim. */
    ASKING,
    /** Another client's claim holds it; the watch on that claim brings it back. */
    CLAIMED_ELSEWHERE,
    /** A claim of ours holds it. */
    HELD_HERE,
    /** Our claim on it is being deleted; it comes back once the delete is confirmed. */
    RELEASING;

    /** What can happen to a name. */
    enum Event {
        HANDED_OUT,
        ATTEMPT_ENDED,
        ANOTHER_ATTEMPT_ENDED,
        ITEM_GONE,
        FIRST_SIGHTING,
        WATCHING_CLAIM,
        /** The watched claim was deleted. */
        CLAIM_DELETED,
        /** The watched claim turned out ours, or absent: the attempt that asked goes on. */
        CLAIM_ANSWERED,
        HELD,
        HOLD_ENDED,
        RELEASING,
        RELEASED,
        LISTED,
        NOT_LISTED,
        SESSION_ENDED
    }

    /**
     * Where {@code event} takes a name in this state; null if it stays as it is. {@code held} is the session of this
     * state's claim (HELD_HERE, RELEASING), {@code session} the session of the claim the event is about (HELD,
     * HOLD_ENDED, RELEASING, RELEASED), and {@code current} the client's session now.
     */
    NameState on(Event event, long held, long session, long current) {
        boolean currentClaim = (this == HELD_HERE || this == RELEASING) && held == current;
        return switch (event) {
            case HANDED_OUT -> this == CANDIDATE ? ATTEMPTING : null;
            case ATTEMPT_ENDED ->
                switch (this) {
                    case ATTEMPTING -> OUT_OF_PLAY; // the next read brings it back if it is still there
                    case STEPPING_ASIDE -> DEFERRED;
                    case ASKING -> CLAIMED_ELSEWHERE;
                    default -> null;
                };
            case ANOTHER_ATTEMPT_ENDED -> this == DEFERRED || this == STEPPING_ASIDE ? CANDIDATE : null;
            case ITEM_GONE -> this == CANDIDATE ? OUT_OF_PLAY : null;
            case FIRST_SIGHTING ->
                switch (this) {
                    case ATTEMPTING -> STEPPING_ASIDE;
                    case OUT_OF_PLAY -> DEFERRED;
                    default -> null; // it has its own way back
                };
            case WATCHING_CLAIM ->
                switch (this) {
                    case ATTEMPTING, STEPPING_ASIDE -> ASKING;
                    case OUT_OF_PLAY, CANDIDATE, DEFERRED -> CLAIMED_ELSEWHERE;
                    default -> null; // already watched, or held by a claim of ours, which outranks the watch
                };
            case CLAIM_DELETED -> this == CLAIMED_ELSEWHERE || this == ASKING ? CANDIDATE : null;
            case CLAIM_ANSWERED ->
                switch (this) {
                    case CLAIMED_ELSEWHERE -> OUT_OF_PLAY;
                    case ASKING -> ATTEMPTING;
                    default -> null;
                };
            case HELD -> currentClaim && held != session ? null : HELD_HERE;
            case HOLD_ENDED -> this == HELD_HERE && held == session ? OUT_OF_PLAY : null;
            case RELEASING -> currentClaim && held != session ? null : RELEASING;
            case RELEASED -> this == RELEASING && held == session ? CANDIDATE : null;
            case LISTED ->
                switch (this) {
                    case OUT_OF_PLAY, DEFERRED -> CANDIDATE;
                    case STEPPING_ASIDE -> ATTEMPTING; // a read calls the step aside off; the attempt goes on
                    case HELD_HERE, RELEASING -> currentClaim ? null : CANDIDATE; // that claim died with its session
                    default -> null;
                };
            case NOT_LISTED ->
                switch (this) {
                    case DEFERRED -> OUT_OF_PLAY; // the item is gone
                    case STEPPING_ASIDE -> ATTEMPTING;
                    default -> null;
                };
            case SESSION_ENDED ->
                switch (this) {
                    case CLAIMED_ELSEWHERE, ASKING -> CANDIDATE; // the watch died with the session
                    case HELD_HERE, RELEASING ->
                        currentClaim ? null : CANDIDATE; // so did every claim of another session
                    default -> null;
                };
        };
    }
}
