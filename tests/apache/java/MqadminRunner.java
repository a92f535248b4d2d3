package io.pocketmq.tests;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.management.LockInfo;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Apache RocketMQ's mqadmin (MQAdminStartup.main, of the tools jar on the class path) run for many commands in one
 * JVM, for the suite (tests/apache/apache_rocketmq.py): a JVM per command spent a second or two of CPU on start-up
 * and class loading, times some 150 commands.
 *
 * <p>5.x's remoting client always starts its NettyEventExecutor (4.x only with a channel listener, which mqadmin's
 * client lacks), a thread that polls its event queue for 3 s at a time and sees the stop flag only between polls.
 * Its shutdown sets the flag and joins the thread: unless a channel's close event happens to come after the flag,
 * mqadmin's shutdown waited out the poll, up to 3 s, in many of the suite's 5.5.0 commands, whichever server
 * they ran against (bench/README.md, "5.5.0's mqadmin and its event poll"). A watcher interrupts that
 * thread once the command's thread joins it, after the flag is set: its loop catches the interrupt (a warning in
 * the client's log file) and ends. Only the wait changes; the command's output is the same.
 *
 * <p>Each request on stdin is a line with the number of arguments, then one line per argument (in the platform's
 * argument encoding, sun.jnu.encoding, as a launcher would decode them). Each command's System.out and System.err
 * are captured, in the default charset as the JVM's own streams write them, and the answer on the real stdout is a
 * line {@code DONE <exit code> <stdout bytes> <stderr bytes>} and the bytes. main's uncaught throwable is printed
 * as the launcher prints it, exit code 1. A command that calls System.exit (mqadmin does on a command line it
 * cannot parse) ends the JVM as it would have ended a JVM of its own: a shutdown hook answers {@code EXIT ...}
 * with what the command printed, and the exit code is the process's. EOF on stdin ends the runner.
 *
 * <p>Each mqadmin command creates its admin client (or producer, consumer) under an instance name of its own and
 * shuts it down, which removes it from MQClientManager: no client outlives its command. The sub-command objects,
 * which keep state of their own (sendMessage's producer), are made anew for each command. The one difference from a
 * JVM per command: a stack trace a failed command prints has the runner's frames below MQAdminStartup.main.
 */
public final class MqadminRunner {
    private static final Object LOCK = new Object();
    private static ByteArrayOutputStream out = new ByteArrayOutputStream();
    private static ByteArrayOutputStream err = new ByteArrayOutputStream();
    private static boolean running;
    private static OutputStream reply;

    public static void main(String[] argv) throws Exception {
        Class<?> startup = Class.forName("org.apache.rocketmq.tools.command.MQAdminStartup");
        Method main = startup.getMethod("main", String[].class);
        List<List<?>> commandLists = new ArrayList<>();
        for (Field field : startup.getDeclaredFields()) {
            if (Modifier.isStatic(field.getModifiers()) && List.class.isAssignableFrom(field.getType())) {
                field.setAccessible(true);
                commandLists.add((List<?>) field.get(null));
            }
        }
        if (commandLists.size() != 1) {
            throw new IllegalStateException("MQAdminStartup's list of sub-commands not found: " + commandLists);
        }
        Charset argCharset = Charset.forName(System.getProperty("sun.jnu.encoding", Charset.defaultCharset().name()));
        InputStream in = new BufferedInputStream(System.in);
        reply = new BufferedOutputStream(new FileOutputStream(FileDescriptor.out));
        PrintStream capturedOut = new PrintStream(new Sink(true), true);
        PrintStream capturedErr = new PrintStream(new Sink(false), true);
        System.setOut(capturedOut);
        System.setErr(capturedErr);
        Thread commandThread = Thread.currentThread();
        Thread watcher = new Thread(() -> endStoppedEventExecutors(commandThread), "mqadmin-runner-watcher");
        watcher.setDaemon(true);
        watcher.start();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            synchronized (LOCK) {
                if (running) {
                    answer("EXIT", 0);
                }
            }
        }));
        while (true) {
            String count = readLine(in, StandardCharsets.US_ASCII);
            if (count == null) {
                System.exit(0);  // not return: a client thread left running would keep the JVM up
            }
            List<String> args = new ArrayList<>();
            for (int i = Integer.parseInt(count.trim()); i > 0; i--) {
                args.add(readLine(in, argCharset));
            }
            // main adds a new instance of every sub-command to a static list and runs the first of that name; a
            // command keeps state in its instance (sendMessage its producer, shut down after the command), so each
            // command gets new ones, as in a JVM of its own.
            commandLists.get(0).clear();
            synchronized (LOCK) {
                out.reset();
                err.reset();
                running = true;
            }
            int code = 0;
            try {
                main.invoke(null, (Object) args.toArray(new String[0]));
            } catch (InvocationTargetException e) {
                capturedErr.print("Exception in thread \"main\" ");
                e.getCause().printStackTrace(capturedErr);
                code = 1;
            }
            capturedOut.flush();
            capturedErr.flush();
            synchronized (LOCK) {
                running = false;
                answer("DONE", code);
            }
        }
    }

    /** See the class comment. It looks only while a command runs, and without the stack until the command's thread
     * waits on a Thread's monitor, so the runner between commands costs nothing. */
    private static void endStoppedEventExecutors(Thread main) {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        while (true) {
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                return;
            }
            synchronized (LOCK) {
                if (!running) {
                    continue;
                }
            }
            ThreadInfo info = threads.getThreadInfo(main.getId());
            LockInfo joined = info == null ? null : info.getLockInfo();
            if (joined == null || !Thread.class.getName().equals(joined.getClassName())) {
                continue;
            }
            for (Thread thread : Thread.getAllStackTraces().keySet()) {
                // ServiceThread.shutdown joins only after setting the flag, so the thread is past its work.
                if ("NettyEventExecutor".equals(thread.getName())
                        && System.identityHashCode(thread) == joined.getIdentityHashCode()
                        && inServiceThreadShutdown(threads.getThreadInfo(main.getId(), 8))) {
                    thread.interrupt();
                }
            }
        }
    }

    private static boolean inServiceThreadShutdown(ThreadInfo info) {
        if (info == null) {
            return false;
        }
        for (StackTraceElement frame : info.getStackTrace()) {
            if ("org.apache.rocketmq.common.ServiceThread".equals(frame.getClassName())
                    && "shutdown".equals(frame.getMethodName())) {
                return true;
            }
        }
        return false;
    }

    private static void answer(String kind, int code) {
        try {
            String head = kind + " " + code + " " + out.size() + " " + err.size() + "\n";
            reply.write(head.getBytes(StandardCharsets.US_ASCII));
            out.writeTo(reply);
            err.writeTo(reply);
            reply.flush();
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
    }

    private static String readLine(InputStream in, Charset charset) throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        int b;
        while ((b = in.read()) != '\n') {
            if (b < 0) {
                return line.size() == 0 ? null : line.toString(charset);
            }
            line.write(b);
        }
        return line.toString(charset);
    }

    /** System.out or System.err of the command being run (what a thread prints between commands is dropped). */
    private static final class Sink extends OutputStream {
        private final boolean isOut;

        Sink(boolean isOut) {
            this.isOut = isOut;
        }

        @Override
        public void write(int b) {
            synchronized (LOCK) {
                if (running) {
                    (isOut ? out : err).write(b);
                }
            }
        }

        @Override
        public void write(byte[] b, int off, int len) {
            synchronized (LOCK) {
                if (running) {
                    (isOut ? out : err).write(b, off, len);
                }
            }
        }
    }
}
