package io.coord.bench;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.text.ParseException;
import java.util.List;
import jdk.jfr.Configuration;
import jdk.jfr.Recording;

/**
 * A Flight Recorder recording of one run ({@code --jfr FILE}): the JDK's default settings, which cost about one per
 * cent, and every coord event. Written when the run ends, however it ends.
 */
final class FlightRecording implements AutoCloseable {
    private static final List<String> COORD_EVENTS = List.of(
            "io.coord.Acquire", "io.coord.Hold", "io.coord.LeaseState", "io.coord.Leadership", "io.coord.Queue");

    private final Recording recording;
    private final Path file;
    private final PrintStream out;

    private FlightRecording(Recording recording, Path file, PrintStream out) {
        this.recording = recording;
        this.file = file;
        this.out = out;
    }

    /** Starts recording into {@code file}; says where it went on {@code out} once closed. */
    static FlightRecording start(Path file, PrintStream out) throws IOException, ParseException {
        Recording recording = new Recording(Configuration.getConfiguration("default"));
        recording.setName("coord-bench");
        COORD_EVENTS.forEach(name -> recording.enable(name).withoutStackTrace());
        recording.setToDisk(true);
        recording.setDestination(file);
        recording.start();
        return new FlightRecording(recording, file, out);
    }

    /** Stops the recording, which writes the file. */
    @Override
    public void close() {
        recording.stop();
        recording.close();
        out.println("flight recording written to " + file + "; read it with: jfr print --events io.coord.Acquire "
                + file + " (or jfr summary, or JDK Mission Control)");
    }
}
