/**
 * Files that decide what a command does: package manifests and their scripts, lock files, build and
 * task files, package-manager and tool configuration, git's configuration and hooks. Once any
 * command may run without asking (`longrun.agent.allowedCommands`), changing one of them changes
 * what that command runs (`npm test` runs the `test` script of `package.json`), so writing them
 * always asks (`protected-paths.ts`). Pure data.
 */

export interface CommandFileRule {
  /** Relative to a workspace folder, matched case-insensitively, in every subfolder. */
  readonly glob: string;
  /** What the file makes commands do, in words the question shows. */
  readonly decides: string;
}

export const COMMAND_FILE_RULES: readonly CommandFileRule[] = [
  {
    glob: '**/{package.json,deno.json,deno.jsonc,composer.json}',
    decides: 'holds the scripts that package managers run (npm test, npm run …) and the packages they install',
  },
  {
    glob: '**/{package-lock.json,npm-shrinkwrap.json,yarn.lock,pnpm-lock.yaml,bun.lock,bun.lockb,composer.lock,Gemfile.lock,Pipfile.lock,poetry.lock,uv.lock,Cargo.lock}',
    decides: 'pins the packages that installs fetch and npx runs without asking',
  },
  {
    glob: '**/{.npmrc,.yarnrc,.yarnrc.yml,.yarn/**,.pnpmfile.cjs,pnpm-workspace.yaml,bunfig.toml,pip.conf,.pypirc}',
    decides: 'configures the package manager: the shell it runs scripts with, the registry, plugins and hooks',
  },
  {
    glob: '**/{pyproject.toml,setup.py,setup.cfg,tox.ini,noxfile.py,pytest.ini,conftest.py,Pipfile,requirements*.txt}',
    decides: "configures Python's build, install and test tools, which run code from it",
  },
  {
    glob: '**/{Makefile,makefile,GNUmakefile,*.mk,justfile,.justfile,Taskfile.yml,Taskfile.yaml,Taskfile.dist.yml,Rakefile,Gemfile,*.gemspec}',
    decides: 'defines the commands that make, just, task and rake run',
  },
  {
    glob: '**/{CMakeLists.txt,*.cmake,CMakePresets.json,meson.build,meson_options.txt,BUILD,BUILD.bazel,WORKSPACE,WORKSPACE.bazel,MODULE.bazel,*.bzl,.bazelrc,build.xml,build.sbt}',
    decides: 'is a build file: building runs the commands it defines',
  },
  {
    glob: '**/{build.gradle,build.gradle.kts,settings.gradle,settings.gradle.kts,gradle.properties,init.gradle,gradlew,gradlew.bat,gradle/wrapper/**,pom.xml,.mvn/**,mvnw,mvnw.cmd}',
    decides: 'is Gradle or Maven build code or configuration, run by every build',
  },
  {
    glob: '**/{Cargo.toml,build.rs,.cargo/config,.cargo/config.toml,rust-toolchain,rust-toolchain.toml,go.mod,go.work,mix.exs}',
    decides: 'configures cargo or go: build scripts, runners, toolchains and the modules they fetch',
  },
  {
    glob: '**/{.envrc,mise.toml,.mise.toml,.tool-versions,.pre-commit-config.yaml,lefthook.yml,.lefthook.yml}',
    decides: 'sets the environment or the tools that commands and git hooks run',
  },
  {
    glob: '**/{.mocharc*,jest.config.*,vitest.config.*,vitest.workspace.*,playwright.config.*,karma.conf.*}',
    decides: 'configures the test runner: the files it loads and the programs it starts',
  },
  {
    glob: '**/{.gitattributes,.gitmodules,.lfsconfig,.gitconfig}',
    decides: 'tells git which filters, drivers and submodules to use, which can run programs',
  },
];
