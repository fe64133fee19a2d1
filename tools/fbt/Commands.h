//===- Commands.h - the fbt subcommands ------------------------------*- C++ -*-===//

#ifndef FBT_TOOLS_FBT_COMMANDS_H
#define FBT_TOOLS_FBT_COMMANDS_H

namespace fbt {
int runInspect(int argc, char **argv);
int runStep(int argc, char **argv);
int runTrain(int argc, char **argv);
int runGenerate(int argc, char **argv);
int runScore(int argc, char **argv);
int runStates(int argc, char **argv);
int runProbe(int argc, char **argv);
int runEval(int argc, char **argv);
int runBench(int argc, char **argv);
int runTune(int argc, char **argv);
int runDevices(int argc, char **argv);
int runTokenize(int argc, char **argv);
int runServe(int argc, char **argv);
int runExport(int argc, char **argv);
int runQuantize(int argc, char **argv);
int runImport(int argc, char **argv);
} // namespace fbt

#endif // FBT_TOOLS_FBT_COMMANDS_H
