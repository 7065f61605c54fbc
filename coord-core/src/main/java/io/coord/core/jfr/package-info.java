/**
 * coord's JDK Flight Recorder events. Every event is named {@code io.coord.*}, sits in the category {@code coord},
 * records no stack trace unless a recording asks for one, and is committed once, where the thing it tells of ended:
 *
 * <ul>
 *   <li>{@link io.coord.core.jfr.AcquireEvent io.coord.Acquire}: an acquisition, its wait and its outcome;
 *   <li>{@link io.coord.core.jfr.HoldEvent io.coord.Hold}: a hold, how long it lasted and how it ended;
 *   <li>{@link io.coord.core.jfr.LeaseStateEvent io.coord.LeaseState}: a held lease turning SUSPECT, HELD again, or
 *       LOST;
 *   <li>{@link io.coord.core.jfr.LeadershipEvent io.coord.Leadership}: a latch or selector gaining or losing
 *       leadership;
 *   <li>{@link io.coord.core.jfr.QueueEvent io.coord.Queue}: a queue call and how many items it moved.
 * </ul>
 *
 * <p>The events are enabled by default in any recording; while nothing records them, coord only reads a flag. Times
 * are in fields of their own ({@code waitTime}, {@code holdTime}, {@code callTime}), measured from when the thing
 * began, because an event can end on another thread than the one it began on.
 */
package io.coord.core.jfr;
