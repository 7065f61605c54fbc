package io.coord.core.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.time.temporal.ChronoUnit;
import org.junit.jupiter.api.Test;

/** The view's settings reject what they cannot honour, with the value in the message. */
class ViewSettingsTest {
    @Test
    void lingerIsBetweenZeroAndADay() {
        ViewSettings defaults = ViewSettings.DEFAULTS;

        assertEquals(Duration.ZERO, defaults.withLinger(Duration.ZERO).linger());
        assertEquals(
                ViewSettings.MAX_LINGER,
                defaults.withLinger(ViewSettings.MAX_LINGER).linger());
        assertEquals(
                "linger must be a duration from 0 to PT24H: PT-0.001S",
                assertThrows(IllegalArgumentException.class, () -> defaults.withLinger(Duration.ofMillis(-1)))
                        .getMessage());
        assertEquals(
                "linger must be a duration from 0 to PT24H: PT24H0.001S",
                assertThrows(
                                IllegalArgumentException.class,
                                () -> defaults.withLinger(ViewSettings.MAX_LINGER.plusMillis(1)))
                        .getMessage());
        assertThrows(IllegalArgumentException.class, () -> defaults.withLinger(ChronoUnit.FOREVER.getDuration()));
    }

    @Test
    void maxOthersIsNotNegative() {
        assertEquals(
                "maxOthers must be >= 0: -1",
                assertThrows(IllegalArgumentException.class, () -> ViewSettings.DEFAULTS.withMaxOthers(-1))
                        .getMessage());
    }
}
